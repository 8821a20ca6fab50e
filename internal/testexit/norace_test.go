//go:build !race

package testexit_test

const raceEnabled = false

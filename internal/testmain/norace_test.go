//go:build !race

package testmain_test

const raceEnabled = false

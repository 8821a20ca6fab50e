package cloudflare_test

import (
	"sort"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func sortStrings(s []string) { sort.Strings(s) }

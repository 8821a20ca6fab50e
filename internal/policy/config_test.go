package policy_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/policy"
)

// repoPattern is GitHub's owner/name rule as the program once checked it.
var repoPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

func TestIsRepo_OwnerAndName(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"knue/policies":                    true,
		"k/p":                              true,
		"knue-univ/policy.registry_v2":     true,
		strings.Repeat("o", 39) + "/n":     true,
		"o/" + strings.Repeat("n", 100):    true,
		strings.Repeat("o", 40) + "/n":     false,
		"o/" + strings.Repeat("n", 101):    false,
		"-knue/policies":                   false,
		"knue":                             false,
		"knue/":                            false,
		"/policies":                        false,
		"knue/policies/extra":              false,
		"knue_univ/policies":               false,
		"knue/policies\n":                  false,
		"knue/정책":                          false,
		"https://github.com/knue/policies": false,
	} {
		if got := policy.IsRepo(s); got != want {
			t.Errorf("IsRepo(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestIsRepo_AsTheRegularExpression: the check by hand accepts exactly
// what the regular expression it replaced accepts.
func TestIsRepo_AsTheRegularExpression(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 1))
	// part is n characters, mostly of good, now and then one of odd
	part := func(n int, good string) string {
		const odd = "-._/ é\n:"
		var b strings.Builder
		for range n {
			if rng.IntN(40) == 0 {
				b.WriteByte(odd[rng.IntN(len(odd))])
			} else {
				b.WriteByte(good[rng.IntN(len(good))])
			}
		}
		return b.String()
	}
	for range 1000 {
		s := part(rng.IntN(42), "aZ09-") + "/" + part(rng.IntN(103), "aZ09-._")
		if got, want := policy.IsRepo(s), repoPattern.MatchString(s); got != want {
			t.Fatalf("IsRepo(%q) = %v, the regular expression says %v", s, got, want)
		}
	}
}

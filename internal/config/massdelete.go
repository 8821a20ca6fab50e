package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/knue/syncjob/internal/redact"
)

// MassDeleteFlag is --allow-mass-delete: alone (or yes/no) any plan, or =N
// a plan that deletes exactly N policies. A number is a count, 1 too: the
// flag pins a reviewed plan; ALLOW_MASS_DELETE is yes/no only.
type MassDeleteFlag struct {
	Any bool // any plan
	N   int  // a plan that deletes exactly N policies (with Any false)
}

// IsBoolFlag lets the flag stand alone.
func (m *MassDeleteFlag) IsBoolFlag() bool { return true }

func (m *MassDeleteFlag) String() string {
	if m == nil || m.N == 0 {
		return ""
	}
	return strconv.Itoa(m.N)
}

func (m *MassDeleteFlag) Set(v string) error {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		*m = MassDeleteFlag{N: n}
		return nil
	}
	b, err := ParseBool(v)
	if err != nil {
		return fmt.Errorf("%s is not a count of policies or a yes/no value", redact.Quote(v))
	}
	*m = MassDeleteFlag{Any: b}
	return nil
}

package report

import (
	"fmt"

	"github.com/knue/syncjob/internal/policy"
)

// mirrorLine is the run report's line of the content mirror: what the run
// stored and removed, or on a dry run what it would.
func mirrorLine(m *policy.MirrorSummary, dry bool) string {
	if dry {
		return fmt.Sprintf("content mirror %s: would upload %d, delete %d", m.Target, m.Uploaded, m.Deleted)
	}
	line := fmt.Sprintf("content mirror %s: %d uploaded (%d bytes), %d deleted", m.Target, m.Uploaded, m.BytesUploaded, m.Deleted)
	if m.Repaired > 0 {
		line += fmt.Sprintf(", %d repaired", m.Repaired)
	}
	return line
}

// mirrorStatus is status's line of the content mirror, from the last run:
// its target, its objects when a full run last listed them, and the last
// drift repaired.
func mirrorStatus(m *policy.MirrorSummary) string {
	objects := "objects not listed yet"
	if m.Objects >= 0 {
		objects = Count(m.Objects, "object", "objects")
	}
	repair := "no drift repaired"
	if m.LastRepair != "" {
		repair = "last drift repaired " + m.LastRepair
	}
	converged := "converged " + m.Converged
	if m.Converged == "" {
		converged = "not converged: the next run is full"
	}
	return fmt.Sprintf("%s, %s, %s, %s", m.Target, objects, repair, converged)
}

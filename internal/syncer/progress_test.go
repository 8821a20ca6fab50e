package syncer_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/syncer"
)

// heard is a Progress that keeps what it hears.
type heard struct {
	mu     sync.Mutex
	events []string
}

func (h *heard) Phase(name string) { h.add("phase " + name) }
func (h *heard) Advance(done, total int) {
	h.add(fmt.Sprintf("%d/%d", done, total))
}
func (h *heard) add(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func TestRun_Progress_HearsThePhasesInOrderAndEveryWrite(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.seed()
	h := &heard{}
	r.s.Progress = h
	r.mustRun()
	var phases []string
	var applied []string
	applying := false
	for _, e := range h.events {
		switch name, ok := cutPhase(e); {
		case ok:
			phases = append(phases, name)
			applying = name == syncer.PhaseApplying
		case applying:
			applied = append(applied, e)
		}
	}
	// no content mirror: no mirroring to watch
	want := []string{syncer.PhaseReading, syncer.PhasePlanning, syncer.PhaseTitles, syncer.PhaseApplying, syncer.PhaseRecording}
	if diff := cmp.Diff(want, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	// three adds: three queue entries and three policies, one batch each phase
	if diff := cmp.Diff([]string{"0/6", "3/6", "6/6"}, applied); diff != "" {
		t.Errorf("writes counted while applying (-want +got):\n%s\nall: %v", diff, h.events)
	}
}

func cutPhase(e string) (string, bool) { return strings.CutPrefix(e, "phase ") }

package syncer

import "sync"

// Progress hears how a run advances, for a person watching it (the CLI
// draws it on a terminal's status line). The syncer says what happens; how,
// and whether, it is shown is the listener's. Syncer.Progress nil: no one
// listens. Calls may come from several goroutines.
type Progress interface {
	// Phase says a phase of the run began: one of the Phase* names.
	Phase(name string)
	// Advance says how far the phase's counted work is: done of total.
	Advance(done, total int)
}

// The phases a Progress hears, in the order of a run.
const (
	PhaseReading   = "reading"   // the branch head, the tree or compare, the registry
	PhasePlanning  = "planning"  // the lease and the registry's entries the plan needs
	PhaseTitles    = "titles"    // the files whose content changed (counted by the Source)
	PhaseMirroring = "mirroring" // the content mirror's uploads
	PhaseApplying  = "applying"  // the registry's writes (counted here)
	PhaseRecording = "recording" // the run's history, lastRun and lastCommit
)

// progressPhases names, for a Progress, the phases the run times (phases).
var progressPhases = map[string]string{
	"read": PhaseReading, "plan": PhasePlanning, "fetch": PhaseTitles,
	"mirror": PhaseMirroring, "apply": PhaseApplying, "record": PhaseRecording,
}

// silent is the Progress of a run no one watches.
type silent struct{}

func (silent) Phase(string)     {}
func (silent) Advance(int, int) {}

func (s *Syncer) progress() Progress {
	if s.Progress == nil {
		return silent{}
	}
	return s.Progress
}

// counter counts the writes of the apply step for a Progress, as
// concurrent batches land.
type counter struct {
	mu          sync.Mutex
	done, total int
	to          Progress
}

// add counts n more done and tells the Progress.
func (c *counter) add(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done += n
	c.to.Advance(c.done, c.total)
}

package syncer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// apply writes the plan in three phases, each in batches of at most
// BatchSize writes with at most Concurrency batches in flight: announce
// (the queue entry of every add and update, and queue work), publish (the
// policy entries, but not one whose announcement failed or waits: a queue:
// entry never lands after its policy: value), then remove (deletes). One
// failed item never stops the others; the failures are returned, one per
// policy. A run out of time (deadline.go) sends no more batches: what it
// did not write waits for the next run, by name, and is no failure. When
// every write failed the run met an outage: ErrOutage.
func (r *run) apply(ctx context.Context, plan policy.Plan, reg registryState, mig differ.Migration, work differ.QueueWork, m *mirrorRun, mirrorFailed map[string]error) ([]policy.Failure, []string, error) {
	w := r.writes(plan, reg, mig, work, m)
	fails := failures{deadline: deadlineOf(ctx)}
	fails.addMirror(mirrorFailed) // a policy whose text is not in the mirror is neither announced nor published
	nAnnounce, nPublish, nRemove := w.counts()
	count := &counter{total: nAnnounce + nPublish + nRemove, to: r.progress()}
	count.to.Advance(0, count.total)
	// A policy whose announcement failed or waits is not published (a
	// queue: entry never lands after its policy: value); one left out is
	// counted done, not to be waited for.
	sent := r.writePuts(ctx, w, &fails, count) // announce, then publish, group by group (puts.go)
	sent += r.writeAll(ctx, logkey.Deletes, w.remove(), v1KeptFor(plan, &fails), &fails, count)
	if sent > 0 && fails.keys == sent && !fails.limit {
		return nil, nil, fmt.Errorf("%w: all %d registry writes failed, e.g. %s", ErrOutage, sent, fails.first)
	}
	fails.addMirror(r.mirrorDelete(ctx, m, plan, fails.skip)) // the objects last
	fails.addNamed(m.unsafeLeft())
	out := fails.list()
	for _, f := range out {
		r.log.Error("item failed", logkey.Policy, f.PolicyName, logkey.Error, f.Error)
	}
	waits := fails.waiting()
	if len(waits) > 0 {
		r.log.Warn("out of time: writes left for the next run", logkey.Waiting, len(waits), logkey.WaitingPolicies, firstNames(waits))
	}
	return out, waits, nil
}

// writeAll writes the ops of one phase in concurrent batches, collecting
// failures and counting each batch done. An op whose policy skip names
// is left out (counted done). It returns how many writes it sent or kept
// for the next run.
func (r *run) writeAll(ctx context.Context, kind string, ops iter.Seq[op], skip func(string) bool, fails *failures, count *counter) int {
	sent := 0
	kept := func(yield func(op) bool) {
		for o := range ops {
			if skip(o.name) {
				r.madeWrites(-1)
				count.add(1)
				continue
			}
			sent++
			if !yield(o) {
				return
			}
		}
	}
	r.runBatches(ctx, kept, func(ctx context.Context, ops []op) {
		r.sendBatch(ctx, kind, batch{ops: ops}, fails, count)
	})
	return sent
}

// sendBatch writes one batch (none when empty), collecting its failures
// and counting it done; a run out of time (deadline.go) keeps it for the
// next run instead.
func (r *run) sendBatch(ctx context.Context, kind string, b batch, fails *failures, count *counter) {
	n := b.len()
	if n == 0 {
		return
	}
	defer r.madeWrites(-n)
	if r.outOfTime(ctx) {
		fails.wait(b)
		return
	}
	fails.add(b, b.write(ctx, r.Registry))
	r.log.Debug("batch applied", kind, n)
	count.add(n)
}

// takeWrites moves the batch's writes out of its ops, which keep their
// names and keys: the store may then let each encoded value go once it is
// in the request body (cloudflare.Store.Put), instead of the batch holding
// every value while the body holding them too is sent.
func takeWrites(batch []op) []registry.Write {
	ws := make([]registry.Write, len(batch))
	for i := range batch {
		ws[i], batch[i].w = batch[i].w, registry.Write{}
	}
	return ws
}

// entryOf is the entry the item writes: the registry's (its legacy fields
// and, for a move or a migration, its lastUpdated) with the item's name,
// title, sha and path, and its legacy fields as they are now.
func (r *run) entryOf(it policy.Item, reg registryState, mig differ.Migration, now string) policy.Entry {
	e := reg.entries[it.PolicyName]
	e.PolicyName, e.Title, e.Status, e.SHA, e.Path = it.PolicyName, it.Title, policy.StatusActive, it.SHA, it.Path
	if (it.Action != policy.ActMove && it.Action != policy.ActMigrate) || e.LastUpdated == "" {
		e.LastUpdated = now
	}
	return differ.WithLegacy(e, mig.Carry, r.start)
}

// maxWritesInFlight bounds the registry writes a run has in flight at
// once: at the default 50 a batch every one of Concurrency batches may be
// in flight (800 writes at 16), at Cloudflare's 10,000 a batch two are. A
// batch's entries are made from the plan's items as its body is written
// (itemWrites, cloudflare.Store.PutMade), so a batch in flight holds its
// items' indices, not its 6 MB of JSON: at 50,000 policies (docs/bench.md,
// "When to raise `BATCH_SIZE`") two at once instead of one cost 16 MiB of
// peak RSS (59 -> 75) and saved 0.7 s of 5.3 (1.40x -> 1.24x the minimal
// client); four cost 30 MiB for 0.1 s more.
const maxWritesInFlight = 20000

// batchesInFlight is how many write batches a run sends at once:
// Concurrency, as long as they hold no more than maxWritesInFlight writes.
func (o Options) batchesInFlight() int {
	return max(1, min(o.Concurrency, maxWritesInFlight/o.BatchSize))
}

// runBatches calls do for each batch of ops, with bounded concurrency. A
// batch is made (its ops drawn from the sequence) only once a slot is free
// for it, so at most batchesInFlight batches exist at once.
func (r *run) runBatches(ctx context.Context, ops iter.Seq[op], do func(context.Context, []op)) {
	next, stop := iter.Pull(ops)
	defer stop()
	slots := make(chan struct{}, r.opt.batchesInFlight())
	var wg sync.WaitGroup
	for {
		slots <- struct{}{}
		batch := make([]op, 0, r.opt.BatchSize)
		for len(batch) < r.opt.BatchSize {
			o, ok := next()
			if !ok {
				break
			}
			batch = append(batch, o)
		}
		if len(batch) == 0 {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			do(ctx, batch)
		})
	}
	wg.Wait()
}

// failures collects the failed writes of concurrent batches, by policy,
// and the writes the run had no time for.
type failures struct {
	mu     sync.Mutex
	byName map[string]string
	keys   int    // failed writes
	limit  bool   // a write broke a registry limit: an item's fault, not an outage
	first  string // the first failure, to name an outage
	// deadline is the run's (zero: none); later names whose writes were
	// not sent, or failed only because the deadline came (timeUp).
	deadline time.Time
	later    map[string]bool
}

// wait keeps the batch's policies for the next run: not sent.
func (f *failures) wait(b batch) {
	names := make([]string, b.len())
	for i := range names {
		names[i] = b.name(i)
	}
	f.waitNames(names...)
}

// waitNames marks the policies of names waiting for the next run.
func (f *failures) waitNames(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.later == nil {
		f.later = map[string]bool{}
	}
	for _, name := range names {
		f.later[name] = true
	}
}

// add collects the failed writes of the batch, by policy; a write's key is
// made again only when some write of its batch failed.
func (f *failures) add(b batch, errs map[string]error) {
	if len(errs) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byName == nil {
		f.byName = map[string]string{}
	}
	for i := range b.len() {
		key := b.key(i)
		err, ok := errs[key]
		if !ok || err == nil {
			continue
		}
		name := b.name(i)
		if strings.HasPrefix(key, registry.DeadLetterPrefix) {
			// a superseded dead letter not removed is no write of its
			// policy's: failed under its own key, the policy's queue
			// entry and count are left alone, and the next full run
			// removes it (an adversarial helper found the published
			// version recorded as a failed write, its announcement
			// turned into a failure record)
			name = key
		}
		if timeUp(err, f.deadline) {
			if f.later == nil {
				f.later = map[string]bool{}
			}
			f.later[name] = true
			continue
		}
		f.keys++
		f.limit = f.limit || errors.Is(err, policy.ErrTooLarge)
		if f.first == "" {
			f.first = key + ": " + err.Error()
		}
		if prev, seen := f.byName[name]; seen {
			f.byName[name] = prev + "; " + err.Error()
		} else {
			f.byName[name] = err.Error()
		}
	}
}

// addMirror adds the content mirror's failed uploads and deletes, by
// policy name. One the run's deadline cut (timeUp), or had no time to
// start, waits for the next run as a registry write would: no item's
// fault, so no failure and no retry counted (review: three such runs made
// a dead letter).
func (f *failures) addMirror(byName map[string]error) {
	named := map[string]string{}
	for name, err := range byName {
		if timeUp(err, f.deadline) {
			f.waitNames(name)
			continue
		}
		named[name] = err.Error()
	}
	f.addNamed(named)
}

// addNamed adds failures by policy name that are not registry writes.
func (f *failures) addNamed(byName map[string]string) {
	if len(byName) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byName == nil {
		f.byName = map[string]string{}
	}
	for name, msg := range byName {
		if prev, seen := f.byName[name]; seen {
			msg = prev + "; " + msg
		}
		f.byName[name] = msg
	}
}

// v1KeptFor is the remove phase's skip: a v1 key's removal follows the
// policy that takes its fields (differ.CarrierOf). When that one failed or
// waits, the key is kept, with its fields, and fails or waits with it: the
// next run carries them again (review: the key was removed, and the retry
// wrote the policy without them).
func v1KeptFor(plan policy.Plan, fails *failures) func(string) bool {
	carriers := map[string]string{}
	for _, it := range plan.Items {
		if c, ok := differ.CarrierOf(it); ok {
			carriers[it.PolicyName] = c
		}
	}
	return func(name string) bool {
		c, ok := carriers[name]
		return ok && fails.follow(name, c)
	}
}

// follow makes name fail or wait as leader does, if it did: it reports
// whether it did.
func (f *failures) follow(name, leader string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, failed := f.byName[leader]; failed {
		f.byName[name] = "kept: policy:" + leader + ", which takes its fields, did not land"
		return true
	}
	if f.later[leader] {
		f.later[name] = true
		return true
	}
	return false
}

// skip says whether the name's next writes are not to be sent: one of
// its writes failed, or waits for the next run.
func (f *failures) skip(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.byName[name]
	return ok || f.later[name]
}

// waiting are the names left for the next run that did not fail, sorted.
func (f *failures) waiting() []string {
	var out []string
	for name := range f.later {
		if _, failed := f.byName[name]; !failed {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (f *failures) list() []policy.Failure {
	out := make([]policy.Failure, 0, len(f.byName))
	for name, msg := range f.byName {
		out = append(out, policy.Failure{PolicyName: name, Error: msg})
	}
	return sortFailures(out)
}

func sortFailures(f []policy.Failure) []policy.Failure {
	slices.SortFunc(f, func(a, b policy.Failure) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	return f
}

// withoutFailed is the plan less the items that failed or wait: the plan
// itself when none did (a copy of 200,000 items was the last peak of a
// first sync's heap).
func withoutFailed(p policy.Plan, failures []policy.Failure, waiting []string) policy.Plan {
	if len(failures) == 0 && len(waiting) == 0 {
		return p
	}
	failed := make(map[string]bool, len(failures)+len(waiting))
	for _, f := range failures {
		failed[f.PolicyName] = true
	}
	for _, name := range waiting {
		failed[name] = true
	}
	p.Items = slices.DeleteFunc(slices.Clone(p.Items), func(it policy.Item) bool { return failed[it.PolicyName] })
	return p
}

package registry_test

import (
	"fmt"
	"testing"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// benchEntries are n entries as a first sync writes them.
func benchEntries(n int) []policy.Entry {
	out := make([]policy.Entry, n)
	for i := range out {
		name := fmt.Sprintf("학사 운영규정 제%05d호", i)
		out[i] = policy.Entry{PolicyName: name, Title: "한국교원대학교 " + name, Status: policy.StatusActive,
			LastUpdated: "2026-11-25T16:00:00Z", SHA: fmt.Sprintf("%040x", i),
			Path: fmt.Sprintf("규정/제%d편 학사/제%d장 운영/%s.md", i%12+1, i%8+1, name)}
	}
	return out
}

// BenchmarkEncode measures encoding the registry writes: one policy entry
// (registry.PolicyPair), one queue entry (registry.QueuePair), and every
// write of a first sync of 10,000 policies (registry.PutPolicy and
// registry.PutQueue, 20,000 writes), what the syncer builds before it
// batches them.
//
//	go test -run '^$' -bench Encode -benchmem ./internal/registry
func BenchmarkEncode(b *testing.B) {
	entries := benchEntries(10000)
	queued := make([]policy.QueueEntry, len(entries))
	for i, e := range entries {
		queued[i] = policy.QueueEntry{PolicyName: e.PolicyName, SHA: e.SHA, Operation: policy.OpAdd, CreatedAt: e.LastUpdated}
	}
	b.Run("PolicyPair", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			registry.PolicyPair(entries[0])
		}
	})
	b.Run("QueuePair", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			registry.QueuePair(queued[0])
		}
	})
	b.Run("writes=20000", func(b *testing.B) {
		b.ReportAllocs()
		ws := make([]registry.Write, 0, 2*len(entries))
		for b.Loop() {
			ws = ws[:0]
			for i := range entries {
				ws = append(ws, registry.PutQueue(queued[i]), registry.PutPolicy(entries[i]))
			}
		}
		if len(ws) != 20000 {
			b.Fatalf("%d writes", len(ws))
		}
	})
}

package report

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/config"

	"github.com/knue/syncjob/internal/logkey"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/redact"
)

// NewLogger builds the process logger: JSON unless on a terminal (or as
// configured), with every secret value replaced wherever it appears.
//
// JSON is for machines, and keeps the field names the log queries use: a
// time.Duration attr named "duration" is written "durationMs" as whole
// milliseconds. Text is for people: a duration reads "duration=1.2s"
// (counts of milliseconds logged as "durationMs" too), requests per API
// read "github=4 registry=5", and an empty error is left out.
func NewLogger(cfg config.Config, w io.Writer, terminal bool) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	secrets := cfg.Secrets()
	text := cfg.LogFormat == "text" || (cfg.LogFormat == "auto" && terminal)
	opts := &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			a = redact.Attr(a, secrets)
			if text {
				return textAttr(a)
			}
			return jsonAttr(a)
		},
	}
	if text {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// msSuffix marks a count of milliseconds in a key: "durationMs", "phasesMs".
const msSuffix = "Ms"

// jsonAttr writes a time.Duration (or a map of them, such as the time each
// phase took) as whole milliseconds, its key marked so.
func jsonAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	key := a.Key
	if !strings.HasSuffix(key, msSuffix) {
		key += msSuffix
	}
	switch {
	case v.Kind() == slog.KindDuration:
		return slog.Int64(key, v.Duration().Milliseconds())
	case v.Kind() == slog.KindAny:
		if m, ok := v.Any().(map[string]time.Duration); ok {
			ms := make(map[string]int64, len(m))
			for k, d := range m {
				ms[k] = d.Milliseconds()
			}
			return slog.Any(key, ms)
		}
	}
	return a
}

// textAttr makes an attr read well to a person.
func textAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	ms, isMs := strings.CutSuffix(a.Key, msSuffix)
	switch {
	case v.Kind() == slog.KindDuration:
		return slog.String(a.Key, humanDuration(v.Duration()))
	case isMs && ms != "" && (v.Kind() == slog.KindInt64 || v.Kind() == slog.KindUint64):
		return slog.String(ms, humanDuration(time.Duration(v.Int64())*time.Millisecond))
	case a.Key == logkey.Error && (v.Kind() == slog.KindString && v.String() == "" || v.Kind() == slog.KindAny && v.Any() == nil):
		return slog.Attr{} // no error: nothing to say
	case v.Kind() == slog.KindAny:
		if cs, ok := v.Any().([]policy.RunChange); ok {
			return slog.String(a.Key, changesText(cs))
		}
		if m, ok := v.Any().(map[string]time.Duration); ok {
			return slog.String(a.Key, joinPairs(m, humanDuration))
		}
		if m, ok := v.Any().(map[string]int64); ok {
			if isMs && ms != "" {
				return slog.String(ms, joinPairs(m, func(n int64) string { return humanDuration(time.Duration(n) * time.Millisecond) }))
			}
			return slog.String(a.Key, joinPairs(m, func(n int64) string { return fmt.Sprint(n) }))
		}
	}
	return a
}

// changesText writes a run's changes as the plan's symbols and names,
// "~학칙, →연구소 규정, -대학원 학칙": a hundred of them stay one readable
// line (the structs would print every path and sha).
func changesText(cs []policy.RunChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = symbols[c.Action].sym + c.PolicyName
	}
	return strings.Join(parts, ", ")
}

// joinPairs prints a map as "k=v k=v", by key.
func joinPairs[V any](m map[string]V, format func(V) string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+format(m[k]))
	}
	return strings.Join(parts, " ")
}

// humanDuration rounds d to what a person reads: 850ms, 1.2s, 3m4s.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

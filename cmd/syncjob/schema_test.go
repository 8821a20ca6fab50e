package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// schemaDir holds the JSON Schemas a worker in any language validates the
// registry's values against.
const schemaDir = "../../schema"

// schemaOfKey names the schema file of each key prefix; lastCommit is a raw
// sha, not JSON.
var schemaOfKey = []struct{ prefix, file string }{
	{registry.PolicyPrefix, "policy-entry.json"},
	{registry.QueuePrefix, "queue-entry.json"},
	{registry.DeadLetterPrefix, "dead-letter.json"},
	{registry.RunPrefix, "run.json"},
	{registry.LastRunKey, "last-run.json"},
	{registry.LeaseKey, "lease.json"},
}

// mustSchemas compiles every schema under schema/, formats asserted, each
// under its $id so that one may refer to another.
func mustSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", schemaDir, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	ids := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if !strings.HasSuffix(id, "/schema/"+filepath.Base(f)) {
			t.Fatalf("%s: $id %q does not end in /schema/%s", f, id, filepath.Base(f))
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
		ids[filepath.Base(f)] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		out[name] = s
	}
	return out
}

func schemaFor(key string) string {
	for _, s := range schemaOfKey {
		if key == s.prefix || (strings.HasSuffix(s.prefix, ":") && strings.HasPrefix(key, s.prefix)) {
			return s.file
		}
	}
	return ""
}

// TestSchema_EveryStoredValueValidates runs real syncs on the embedded
// registry — adds, failures queued for retry, dead letters, a held lease —
// and validates every value the registry then holds against its schema.
func TestSchema_EveryStoredValueValidates(t *testing.T) {
	t.Parallel()
	schemas := mustSchemas(t)
	w := newWorld(t)
	deadLetterWorld(t, w) // announcements, two dead letters, four runs
	w.repo.Write("규정/제3편/새 규정.md", "# 새 규정\n")
	w.repo.Commit("one more policy")
	w.sync(exitPartial) // the dead letters still hold their versions back

	st := w.store()
	defer st.Close()
	ctx := context.Background()
	reg := registry.New(st)
	if _, err := reg.TakeLease(ctx, nil, "schema test", w.now, time.Minute); err != nil {
		t.Fatalf("take lease: %v", err)
	}
	items, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, it := range items {
		if it.Key == registry.LastCommitKey {
			if !regexp.MustCompile(`^[0-9a-f]{40}$`).Match(it.Value) {
				t.Errorf("%s = %q, want a raw commit sha", it.Key, it.Value)
			}
			continue
		}
		file := schemaFor(it.Key)
		if file == "" {
			t.Errorf("key %q has no schema", it.Key)
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(it.Value))
		if err != nil {
			t.Errorf("%s: not JSON: %v", it.Key, err)
			continue
		}
		if err := schemas[file].Validate(v); err != nil {
			t.Errorf("%s does not match %s: %v\n%s", it.Key, file, err, it.Value)
		}
		seen[file]++
	}
	for _, s := range schemaOfKey {
		if seen[s.file] == 0 {
			t.Errorf("no value checked against %s: the runs wrote none", s.file)
		}
	}
}

// TestSchema_RejectsWrongValues shows the schemas are strict enough to
// catch a missing field, a wrong type or a value outside its set.
func TestSchema_RejectsWrongValues(t *testing.T) {
	t.Parallel()
	schemas := mustSchemas(t)
	entry := map[string]any{
		"policyName": "학칙", "title": "한국교원대학교 학칙", "status": "active",
		"lastUpdated": "2026-11-25T16:00:00Z", "sha": strings.Repeat("a", 40), "path": "규정/학칙.md",
	}
	queue := map[string]any{
		"policyName": "학칙", "sha": strings.Repeat("a", 40), "operation": "add",
		"retryCount": 0, "createdAt": "2026-11-25T16:00:00Z", "errorMessage": nil,
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range m {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name, file string
		value      map[string]any
		valid      bool
	}{
		{"a policy entry", "policy-entry.json", entry, true},
		{"policy entry without sha", "policy-entry.json", with(entry, "sha", nil), false},
		{"policy entry with a short sha", "policy-entry.json", with(entry, "sha", "abc"), false},
		{"policy entry with another status", "policy-entry.json", with(entry, "status", "deleted"), false},
		{"policy entry with an unknown field", "policy-entry.json", with(entry, "extra", "x"), false},
		{"a queue entry", "queue-entry.json", queue, true},
		{"queue entry whose retryCount is a string", "queue-entry.json", with(queue, "retryCount", "1"), false},
		{"queue entry with an unknown operation", "queue-entry.json", with(queue, "operation", "move"), false},
		{"queue entry whose createdAt is no time", "queue-entry.json", with(queue, "createdAt", "yesterday"), false},
		{"dead letter without deadAt", "dead-letter.json", with(queue, "reason", "3 failures"), false},
		{"lease without expiresAt", "lease.json", map[string]any{"owner": "x", "acquiredAt": "2026-11-25T16:00:00Z"}, false},
		{"run without status", "run.json", map[string]any{"timestamp": "2026-11-25T16:00:00Z"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			err = schemas[tc.file].Validate(v)
			if tc.valid && err != nil {
				t.Errorf("valid value refused: %v", err)
			}
			if !tc.valid && err == nil {
				t.Errorf("invalid value accepted: %s", b)
			}
		})
	}
}

// TestSchema_NamesEveryField keeps the schemas beside the Go types: every
// JSON field a value can carry, however rare (dirty, waiting, legacy
// fields), is a property of its schema, so additionalProperties never
// refuses what the code writes.
func TestSchema_NamesEveryField(t *testing.T) {
	t.Parallel()
	raw := map[string]map[string]any{}
	for _, s := range schemaOfKey {
		b, err := os.ReadFile(filepath.Join(schemaDir, s.file))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		props, _ := doc["properties"].(map[string]any)
		raw[s.file] = props
	}
	for file, v := range map[string]any{
		"policy-entry.json": policy.Entry{},
		"queue-entry.json":  policy.QueueEntry{},
		"dead-letter.json":  policy.DeadLetter{},
		"last-run.json":     policy.RunSummary{},
		"lease.json":        registry.Lease{},
	} {
		for _, name := range jsonFields(reflect.TypeOf(v)) {
			if _, ok := raw[file][name]; !ok {
				t.Errorf("%s: field %q of %T is not a property", file, name, v)
			}
		}
	}
}

// jsonFields returns the JSON names of a struct's fields, embedded ones
// (structs or pointers to them) flattened.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = append(out, jsonFields(ft)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

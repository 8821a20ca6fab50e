package emf_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/emf"
)

func TestMarshal_WritesTheSpecShape(t *testing.T) {
	t.Parallel()
	line := emf.Line{
		Namespace:  "syncjob",
		Dimensions: map[string]string{"Repo": "knue/policies"},
		Metrics: []emf.Metric{
			{Name: "Added", Unit: emf.Count, Value: 3},
			{Name: "DurationMs", Unit: emf.Milliseconds, Value: 1250},
		},
		Properties: map[string]any{"runId": "r1", "status": "success"},
		Time:       time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC),
	}
	b, err := line.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	want := map[string]any{
		"_aws": map[string]any{
			"Timestamp": float64(1795622400000),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "syncjob",
				"Dimensions": []any{[]any{"Repo"}},
				"Metrics": []any{
					map[string]any{"Name": "Added", "Unit": "Count"},
					map[string]any{"Name": "DurationMs", "Unit": "Milliseconds"},
				},
			}},
		},
		"Repo":       "knue/policies",
		"Added":      float64(3),
		"DurationMs": float64(1250),
		"runId":      "r1",
		"status":     "success",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
	for _, c := range b {
		if c == '\n' {
			t.Fatalf("line contains a newline: %s", b)
		}
	}
}

func TestMarshal_RejectsWhatCloudWatchWouldMisread(t *testing.T) {
	t.Parallel()
	ok := func() emf.Line {
		return emf.Line{Namespace: "ns", Dimensions: map[string]string{"Repo": "a/b"}, Metrics: []emf.Metric{{Name: "Added", Unit: emf.Count, Value: 1}}}
	}
	for name, mutate := range map[string]func(*emf.Line){
		"no namespace":                 func(l *emf.Line) { l.Namespace = "" },
		"no metric":                    func(l *emf.Line) { l.Metrics = nil },
		"property shadows a metric":    func(l *emf.Line) { l.Properties = map[string]any{"Added": 2} },
		"property shadows a dimension": func(l *emf.Line) { l.Properties = map[string]any{"Repo": "x"} },
		"metric twice":                 func(l *emf.Line) { l.Metrics = append(l.Metrics, l.Metrics[0]) },
		"empty dimension value":        func(l *emf.Line) { l.Dimensions["Repo"] = "" },
		"reserved name":                func(l *emf.Line) { l.Properties = map[string]any{"_aws": 1} },
	} {
		t.Run(name, func(t *testing.T) {
			l := ok()
			mutate(&l)
			if _, err := l.Marshal(); !errors.Is(err, emf.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := ok().Marshal(); err != nil {
		t.Errorf("valid line: %v", err)
	}
}

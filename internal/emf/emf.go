package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

// Units used by syncjob; CloudWatch knows more.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
)

// Metric is one value to publish.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// Line is one EMF log line: its metrics are published under Namespace with
// one dimension set made of every Dimensions key.
type Line struct {
	Namespace  string
	Dimensions map[string]string
	Metrics    []Metric
	// Properties are written beside the metrics, searchable in Logs Insights
	// but not published as metrics. A property may not reuse a metric or
	// dimension name: CloudWatch would read it as that value.
	Properties map[string]any
	Time       time.Time
}

// Limits of the format (CloudWatch "Specification: Embedded metric format").
const (
	maxDimensions = 30
	maxMetrics    = 100
)

// ErrInvalid is wrapped by every error of Marshal.
var ErrInvalid = errors.New("emf: invalid line")

// Marshal returns the line as one line of JSON, without the newline.
func (l Line) Marshal() ([]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	root := make(map[string]any, len(l.Dimensions)+len(l.Metrics)+len(l.Properties)+1)
	claim := func(name, what string) error {
		if name == "" || name == "_aws" {
			return fmt.Errorf("%w: %s name %q", ErrInvalid, what, name)
		}
		if _, taken := root[name]; taken {
			return fmt.Errorf("%w: %s name %q is used twice", ErrInvalid, what, name)
		}
		return nil
	}
	dims := make([]string, 0, len(l.Dimensions))
	for name, value := range l.Dimensions {
		if err := claim(name, "dimension"); err != nil {
			return nil, err
		}
		if value == "" {
			return nil, fmt.Errorf("%w: dimension %q has no value", ErrInvalid, name)
		}
		root[name] = value
		dims = append(dims, name)
	}
	slices.Sort(dims)
	type metricDef struct {
		Name string `json:"Name"`
		Unit Unit   `json:"Unit,omitempty"`
	}
	defs := make([]metricDef, 0, len(l.Metrics))
	for _, m := range l.Metrics {
		if err := claim(m.Name, "metric"); err != nil {
			return nil, err
		}
		root[m.Name] = m.Value
		defs = append(defs, metricDef{Name: m.Name, Unit: m.Unit})
	}
	for name, value := range l.Properties {
		if err := claim(name, "property"); err != nil {
			return nil, err
		}
		root[name] = value
	}
	root["_aws"] = map[string]any{
		"Timestamp": l.Time.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  l.Namespace,
			"Dimensions": [][]string{dims},
			"Metrics":    defs,
		}},
	}
	return json.Marshal(root)
}

// check enforces the format's limits on the line as a whole.
func (l Line) check() error {
	switch {
	case l.Namespace == "":
		return fmt.Errorf("%w: empty namespace", ErrInvalid)
	case len(l.Metrics) == 0:
		return fmt.Errorf("%w: no metric", ErrInvalid)
	case len(l.Metrics) > maxMetrics:
		return fmt.Errorf("%w: %d metrics, at most %d", ErrInvalid, len(l.Metrics), maxMetrics)
	case len(l.Dimensions) > maxDimensions:
		return fmt.Errorf("%w: %d dimensions, at most %d", ErrInvalid, len(l.Dimensions), maxDimensions)
	}
	return nil
}

package github

import (
	"encoding/json"
	"fmt"
	"io"
)

// treeEntry is what a listing reads of one entry of a trees answer (the
// url is left in the document).
type treeEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size int64  `json:"size"` // -1 when absent (not a blob)
}

// decodeTree reads a trees answer, {"sha": …, "url": …, "tree": [entry,
// …], "truncated": bool}, from r and hands each entry to each as it is
// decoded: it holds one entry of the document at a time, never the
// document (json.Decoder.Decode of the whole answer buffers all of it
// first, and go-github's Tree keeps every field of every entry).
func decodeTree(r io.Reader, each func(treeEntry)) (truncated bool, err error) {
	d := json.NewDecoder(r)
	if err := expectDelim(d, '{'); err != nil {
		return false, err
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return false, err
		}
		switch key {
		case "tree":
			err = decodeEntries(d, each)
		case "truncated":
			err = d.Decode(&truncated)
		default:
			var skip json.RawMessage
			err = d.Decode(&skip)
		}
		if err != nil {
			return false, fmt.Errorf("field %v: %w", key, err)
		}
	}
	return truncated, expectDelim(d, '}')
}

// decodeEntries reads the tree array (null: no entries) one entry at a time.
func decodeEntries(d *json.Decoder, each func(treeEntry)) error {
	tok, err := d.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("want an array, got %v", tok)
	}
	for d.More() {
		e := treeEntry{Size: -1}
		if err := d.Decode(&e); err != nil {
			return err
		}
		each(e)
	}
	return expectDelim(d, ']')
}

func expectDelim(d *json.Decoder, want json.Delim) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %v, got %v", want, tok)
	}
	return nil
}

package mirror

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ContentType is the Content-Type of every object.
const ContentType = "text/markdown; charset=utf-8"

// Metadata names (x-amz-meta-{name}).
const (
	MetaSHA        = "sha"
	MetaPolicyName = "policyname"
	MetaPath       = "path"
	MetaTitle      = "title"
	MetaContext    = "context"
)

// Doc is one policy version to mirror.
type Doc struct {
	PolicyName string
	Title      string
	SHA        string // git blob sha
	Path       string // repository path
	// LastUpdated is the registry entry's lastUpdated (ISO 8601 UTC): when
	// this version was first synced, not the time of the run, so that the
	// same version always renders the same bytes (and ETag).
	LastUpdated string
	Content     []byte // the file exactly as in git
}

// Key is the object key of a policy: {prefix}{policyName}/policy.md.
func Key(prefix, policyName string) string {
	return prefix + policyName + "/" + ObjectName
}

// PolicyNameOf returns the policy name a key stands for, false when the key
// is not of the form Key(prefix, name) (a foreign object).
func PolicyNameOf(prefix, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "/"+ObjectName)
	if !ok || name == "" || strings.Contains(name, "/") || ValidateKey(prefix, key) != nil {
		return "", false
	}
	return name, true
}

// ETagOf returns the ETag S3 gives a single-part upload of body: the hex
// MD5 of its bytes. The run records it in the registry entry to compare
// with a later listing.
func ETagOf(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}

// Render builds the object of d under prefix: the front-matter block, then
// the content as it is; the Content-Type; the metadata, encoded with
// EncodeHeader. It fails on a name that cannot be a key segment.
func Render(prefix string, d Doc) (Object, error) {
	key := Key(prefix, d.PolicyName)
	if strings.Contains(d.PolicyName, "/") {
		return Object{}, fmt.Errorf("render %q: %w: policy name holds a slash", d.PolicyName, ErrOutsidePrefix)
	}
	if err := ValidateKey(prefix, key); err != nil {
		return Object{}, fmt.Errorf("render %q: %w", d.PolicyName, err)
	}
	front, err := FrontMatter(d)
	if err != nil {
		return Object{}, fmt.Errorf("render %q: %w", d.PolicyName, err)
	}
	body := make([]byte, 0, len(front)+len(d.Content))
	body = append(append(body, front...), d.Content...)
	title := truncate(d.Title, MaxMetadataValueBytes)
	path := truncate(d.Path, MaxMetadataValueBytes)
	return Object{
		Key:         key,
		Body:        body,
		ContentType: ContentType,
		Metadata: map[string]string{
			MetaSHA:        EncodeHeader(d.SHA),
			MetaPolicyName: EncodeHeader(d.PolicyName),
			MetaPath:       EncodeHeader(path),
			MetaTitle:      EncodeHeader(title),
			MetaContext:    EncodeHeader(truncate(Context(d), MaxMetadataValueBytes)),
		},
	}, nil
}

// Context is the short text AI Search attaches to every chunk of the
// object: the title and where the file lives.
func Context(d Doc) string {
	return d.Title + " (" + d.Path + ")"
}

// FrontMatter returns the YAML block that opens an object: "---\n", the
// fields policyName, title, sha, path and lastUpdated, each a double-quoted
// YAML string (so a title with ":", quotes, "#", newlines or one that reads
// as a number or boolean stays the same string), then "---\n". Invalid UTF-8
// is replaced by U+FFFD (YAML cannot hold it).
func FrontMatter(d Doc) ([]byte, error) {
	fields := []struct{ name, value string }{
		{"policyName", d.PolicyName},
		{"title", d.Title},
		{"sha", d.SHA},
		{"path", d.Path},
		{"lastUpdated", d.LastUpdated},
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fields {
		doc.Content = append(doc.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.name},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle,
				Value: strings.ToValidUTF8(f.value, "\uFFFD")})
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode front matter: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode front matter: %w", err)
	}
	buf.WriteString("---\n")
	return buf.Bytes(), nil
}

// errNoFrontMatter: a body that does not open with a front-matter block.
var errNoFrontMatter = errors.New("no front matter")

// ParseFrontMatter reads the front matter of an object body back into a
// Doc (without Content) and returns the rest of the body: the file as in
// git. It is the inverse of Render's body, for tests and tools.
func ParseFrontMatter(body []byte) (Doc, []byte, error) {
	rest, ok := bytes.CutPrefix(body, []byte("---\n"))
	if !ok {
		return Doc{}, nil, errNoFrontMatter
	}
	block, content, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return Doc{}, nil, errNoFrontMatter
	}
	var fm struct {
		PolicyName  string `yaml:"policyName"`
		Title       string `yaml:"title"`
		SHA         string `yaml:"sha"`
		Path        string `yaml:"path"`
		LastUpdated string `yaml:"lastUpdated"`
	}
	if err := yaml.Unmarshal(block, &fm); err != nil {
		return Doc{}, nil, fmt.Errorf("parse front matter: %w", err)
	}
	return Doc{PolicyName: fm.PolicyName, Title: fm.Title, SHA: fm.SHA, Path: fm.Path, LastUpdated: fm.LastUpdated}, content, nil
}

package cloudflare

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/registry"
)

// appendPair appends p's element of a bulk write body to dst, byte for
// byte what encoding/json writes for bulkPair (HTML left as it is), but
// into the caller's buffer: a streamed body encodes each element into one
// buffer it reuses, where encoding/json made an encoder, a copy of the
// value as a string and a buffer per element (four allocations, twice the
// element's size), and the check encoded each element once more only to
// measure it (docs/bench.md, "How we got here", "Memory, seventh pass").
func appendPair(dst []byte, p registry.Pair) []byte {
	dst = append(dst, `{"key":`...)
	dst = appendQuoted(dst, p.Key)
	dst = append(dst, `,"value":`...)
	b64 := asBase64(p.Value)
	if b64 {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, p.Value)
		dst = append(dst, '"')
	} else {
		dst = appendQuoted(dst, p.Value)
	}
	if len(p.Metadata) > 0 {
		dst = append(dst, `,"metadata":`...)
		dst = appendCompact(dst, p.Metadata)
	}
	if ttl := ttlSeconds(p); ttl > 0 {
		dst = append(dst, `,"expiration_ttl":`...)
		dst = strconv.AppendInt(dst, ttl, 10)
	}
	if b64 {
		dst = append(dst, `,"base64":true`...)
	}
	return append(dst, '}')
}

// pairLen is len(appendPair(nil, p)), counted without encoding.
func pairLen(p registry.Pair) int {
	n := len(`{"key":,"value":}`) + quotedLen(p.Key)
	if asBase64(p.Value) {
		n += base64Len(p.Value)
	} else {
		n += quotedLen(p.Value)
	}
	if len(p.Metadata) > 0 {
		n += len(`,"metadata":`) + compactLen(p.Metadata)
	}
	if ttl := ttlSeconds(p); ttl > 0 {
		n += len(`,"expiration_ttl":`) + len(strconv.AppendInt(make([]byte, 0, 20), ttl, 10))
	}
	return n
}

// asBase64 says whether a value goes base64-encoded: when it is not UTF-8,
// or when escaped as a JSON string it would be longer (control characters
// take 6 bytes each: a valid 17 MiB value of them made a 107 MB body,
// over Cloudflare's 100 MB, that base64 fits in 23 MB; an adversarial
// helper).
func asBase64(v []byte) bool {
	return !utf8.Valid(v) || quotedLen(v) > base64Len(v)
}

// base64Len is the length of a value's base64 element: the quoted
// encoding and its flag.
func base64Len(v []byte) int {
	return 2 + base64.StdEncoding.EncodedLen(len(v)) + len(`,"base64":true`)
}

// ttlSeconds is p's TTL in whole seconds, rounded up (0: none).
func ttlSeconds(p registry.Pair) int64 {
	if p.TTL <= 0 {
		return 0
	}
	return int64((p.TTL + time.Second - 1) / time.Second)
}

// escapeLen is how many bytes the character of s at i (size bytes)
// takes in a JSON string as encoding/json writes it with HTML left as it
// is: a quote, a backslash, \b, \f, \n, \r and \t 2; another control
// character, an invalid byte (\ufffd), U+2028 and U+2029 6; else itself.
func escapeLen[S []byte | string](s S, i int) (enc, size int) {
	b := s[i]
	if b < utf8.RuneSelf {
		switch {
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			return 2, 1
		case b < 0x20:
			return 6, 1
		}
		return 1, 1
	}
	r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)])) // at most 4 bytes: no copy made
	if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
		return 6, size
	}
	return size, size
}

// safe says whether b is an ASCII character a JSON string holds as it is.
func safe(b byte) bool { return b >= 0x20 && b < utf8.RuneSelf && b != '"' && b != '\\' }

// shortEscape is the letter that follows the backslash of b's two-byte
// escape.
func shortEscape(b byte) byte {
	switch b {
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	}
	return b // a quote or a backslash
}

// quotedLen is the length of s as a JSON string (appendQuoted).
func quotedLen[S []byte | string](s S) int {
	n := 2
	for i := 0; i < len(s); {
		if safe(s[i]) {
			n, i = n+1, i+1
			continue
		}
		enc, size := escapeLen(s, i)
		n, i = n+enc, i+size
	}
	return n
}

// appendQuoted appends s as a JSON string, as encoding/json writes it with
// HTML left as it is.
func appendQuoted[S []byte | string](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if safe(s[i]) {
			i++
			continue
		}
		enc, size := escapeLen(s, i)
		if enc == size {
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b := s[i]; {
		case size == 1 && enc == 2:
			dst = append(dst, '\\', shortEscape(b))
		case size == 1 && b < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
		case size == 1:
			dst = append(dst, `\ufffd`...)
		default: // U+2028, U+2029: E2 80 A8, E2 80 A9
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xF])
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// compactLen is the length of the valid JSON b without its insignificant
// whitespace, as encoding/json writes a json.RawMessage.
func compactLen(b []byte) int {
	n, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			n++
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			n++
			inString = c == '"'
		}
	}
	return n
}

// appendCompact appends the valid JSON b without its insignificant
// whitespace: b itself when it has none, as metadata made by
// registry.MustJSON has.
func appendCompact(dst, b []byte) []byte {
	if compactLen(b) == len(b) {
		return append(dst, b...)
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, b); err != nil {
		panic("cloudflare: compact metadata: " + err.Error()) // CheckPair let only valid JSON through
	}
	return buf.Bytes()
}

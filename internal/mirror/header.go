package mirror

import (
	"encoding/base64"
	"mime"
	"strings"
	"unicode/utf8"
)

// MaxMetadataValueBytes bounds title, path and context in the metadata
// (before encoding): five values, the name at most 500 bytes, stay within
// S3's 2 KB of user metadata once base64 grows them by a third.
const MaxMetadataValueBytes = 256

// EncodeHeader makes v safe for an HTTP header value, as the package doc
// describes: printable ASCII without "=?" as it is, anything else one RFC
// 2047 B-encoded word of its bytes.
func EncodeHeader(v string) string {
	if plainASCII(v) {
		return v
	}
	return "=?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// DecodeHeader reverses EncodeHeader, and reads the RFC 2047 words S3
// returns for non-ASCII metadata; a value that is not encoded, or not
// decodable, is returned as it is.
func DecodeHeader(v string) string {
	if !strings.Contains(v, "=?") {
		return v
	}
	out, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		return v
	}
	return out
}

// plainASCII: printable ASCII (space to tilde) with no "=?" that a decoder
// would take for an encoded word.
func plainASCII(v string) bool {
	return printableASCII(v) && !strings.Contains(v, "=?")
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

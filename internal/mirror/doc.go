// Package mirror keeps a content mirror beside the registry: each policy's
// markdown, with a YAML front-matter block, as one object at
// {prefix}{policyName}/policy.md in an S3-compatible bucket (Cloudflare R2,
// where AI Search indexes it) or a local folder. It renders objects (Render,
// ETagOf), stores them through a Target (NewFolder, NewS3, or New from the
// CONTENT_* settings), and plans the repair of a drifted mirror from a
// listing without downloading anything (Drift).
//
// Metadata encoding: S3 carries custom metadata (x-amz-meta-*) in HTTP
// headers, which must be ASCII. A value that is printable ASCII and does not
// contain "=?" is sent as it is; any other value (Hangul, a newline, invalid
// UTF-8) is sent as one RFC 2047 encoded word, "=?UTF-8?B?" + standard base64
// of its bytes + "?=" — the form S3 itself uses when it returns non-ASCII
// metadata, and one that mime.WordDecoder reads. DecodeHeader reverses it.
// Title, path and context are cut (at a rune boundary) to
// MaxMetadataValueBytes before encoding, so the metadata stays within S3's
// 2 KB limit; the front matter in the body always carries them whole.
//
// The folder target keeps no metadata (no sidecar): the front matter holds
// the same facts, and a folder has no reader that needs headers.
package mirror

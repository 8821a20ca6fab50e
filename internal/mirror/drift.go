package mirror

import (
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Want is what the mirror should hold for one policy, and what the registry
// records as uploaded for it.
type Want struct {
	// Keep: the object is left as it is, whatever it holds or whether it
	// is there: its registry entry could not be read (nothing to render).
	Keep bool
	SHA  string // the version the head holds
	// UploadedSHA and ETag are what the registry entry records of the last
	// upload: the version uploaded and the ETag the store returned. Empty
	// when nothing is recorded (a registry from before the mirror).
	UploadedSHA string
	ETag        string
}

// Reason says why Drift repairs an object.
type Reason string

const (
	// Missing: no object at the policy's key.
	Missing Reason = "missing"
	// Stale: the recorded upload is of another version than the head's.
	Stale Reason = "stale"
	// Edited: the object's ETag is not the one recorded: changed by hand,
	// or replaced by another writer.
	Edited Reason = "edited"
	// Unrecorded: an object is there but the registry records no upload
	// (the mirror was turned on for an existing registry).
	Unrecorded Reason = "unrecorded"
)

// Repair is one object Drift wants uploaded again.
type Repair struct {
	PolicyName string
	Key        string
	Reason     Reason
}

// Repairs is the plan that makes a mirror equal to what the head wants:
// objects to upload (sorted by policy name) and foreign keys under the
// prefix to delete (sorted). Unsafe lists foreign keys under the prefix
// that no target may delete (ValidateKey refuses them: "..", "//", invalid
// UTF-8, which a server or a folder could resolve outside the prefix):
// left for an operator, and not in Delete, so they cannot block a batch.
type Repairs struct {
	Upload []Repair
	Delete []string
	Unsafe []string
	// Aliases are listed keys that spell a wanted policy's key in another
	// Unicode form (NFD, as macOS tools and the job we replace may have
	// written it). R2 normalizes keys to NFC: there the alias is the
	// policy's own object, and deleting it deleted the object the run had
	// just uploaded while the run reported success (an adversarial helper).
	// Not deleted here: the run tells what each is once it has written the
	// policy's key (syncer's resolveAliases).
	Aliases []string
}

// Empty reports whether there is nothing to repair.
// Unsafe keys need an operator and do not count.
func (r Repairs) Empty() bool { return len(r.Upload) == 0 && len(r.Delete) == 0 }

// Drift compares a listing of the mirror with what the head wants (policy
// name → Want), without reading any object. A wanted policy whose object is
// missing, whose recorded upload is of another version or absent, or whose
// listed ETag differs from the recorded one is uploaded again; a listed
// key under prefix that is not the key of a wanted policy (a deleted
// policy's object left behind, a stray file) is deleted. Listed keys
// outside the prefix, and folder markers, are ignored: they are never
// touched. Pure.
func Drift(prefix string, want map[string]Want, listed []Listed) Repairs {
	var r Repairs
	seen := make(map[string]string, len(listed)) // key → etag
	for _, l := range listed {
		if !strings.HasPrefix(l.Key, prefix) || folderMarker(l) {
			continue
		}
		seen[l.Key] = NormalizeETag(l.ETag)
		name, ok := PolicyNameOf(prefix, l.Key)
		switch {
		case ok && wanted(want, name):
		case ok && want[norm.NFC.String(name)].Keep:
			// a kept entry's object, under another spelling: kept too
		case ok && wanted(want, norm.NFC.String(name)):
			r.Aliases = append(r.Aliases, l.Key)
		case ValidateKey(prefix, l.Key) != nil:
			r.Unsafe = append(r.Unsafe, l.Key)
		default:
			r.Delete = append(r.Delete, l.Key)
		}
	}
	for name, w := range want {
		if w.Keep {
			continue
		}
		key := Key(prefix, name)
		etag, ok := seen[key]
		if reason := repairReason(w, etag, ok); reason != "" {
			r.Upload = append(r.Upload, Repair{PolicyName: name, Key: key, Reason: reason})
		}
	}
	slices.SortFunc(r.Upload, func(a, b Repair) int { return strings.Compare(a.PolicyName, b.PolicyName) })
	slices.Sort(r.Delete)
	r.Delete = slices.Compact(r.Delete)
	slices.Sort(r.Unsafe)
	r.Unsafe = slices.Compact(r.Unsafe)
	slices.Sort(r.Aliases)
	return r
}

// folderMarker says whether l is an empty object whose key ends in "/":
// what the S3 console's "Create folder" (and rclone, Cyberduck) stores to
// show a folder, such as the prefix itself made by hand before the first
// sync. No policy's key ends so; it is left as it is, neither a stray to
// delete nor an unsafe key to report (an adversarial helper found one
// keeping every run partial, and full, for good).
func folderMarker(l Listed) bool {
	return l.Size == 0 && strings.HasSuffix(l.Key, "/")
}

func wanted(want map[string]Want, name string) bool {
	_, ok := want[name]
	return ok
}

// repairReason says why a wanted object needs an upload, "" when it does
// not; listed says whether its key is listed, with etag.
func repairReason(w Want, etag string, listed bool) Reason {
	switch {
	case !listed:
		return Missing
	case w.ETag == "" || w.UploadedSHA == "":
		return Unrecorded
	case w.UploadedSHA != w.SHA:
		return Stale
	case NormalizeETag(w.ETag) != etag:
		return Edited
	}
	return ""
}

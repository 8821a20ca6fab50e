package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/mirror/mirrortest"
)

func TestSync_ContentDir_MirrorsEveryPolicy_StatusNamesIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	dir := t.TempDir()
	w.env["CONTENT_DIR"] = dir
	w.sync(0)
	for name, heading := range map[string]string{"학칙": "# 한국교원대학교 학칙\n", "대학원 학칙": "# 한국교원대학교 대학원 학칙\n", "연구소 설치(운영)․규정": "# 연구소 설치․운영 규정\n"} {
		b, err := os.ReadFile(filepath.Join(dir, "policies", name, "policy.md"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasPrefix(string(b), "---\npolicyName: \""+name+"\"\n") || !strings.Contains(string(b), "---\n"+heading) {
			t.Errorf("%s: object\n%s", name, b)
		}
	}
	st := w.run("status")
	if st.code != 0 || !strings.Contains(st.stdout, "content mirror folder "+dir) || !strings.Contains(st.stdout, "3 objects") {
		t.Errorf("status (exit %d) does not name the mirror:\n%s%s", st.code, st.stdout, st.stderr)
	}
}

// s3World is a seeded world whose content mirror is a bucket on an S3
// server in the test.
func s3World(t *testing.T) (*world, *mirrortest.S3Server) {
	w := newWorld(t)
	seed(w)
	s3 := mirrortest.NewS3Server(t)
	w.env["CONTENT_BUCKET"] = mirrortest.Bucket
	w.env["CONTENT_ENDPOINT"] = s3.URL
	w.env["CONTENT_ACCESS_KEY_ID"] = mirrortest.AccessKeyID
	w.env["CONTENT_SECRET_ACCESS_KEY"] = mirrortest.SecretAccessKey
	w.mirrorClient = s3.Client
	return w, s3
}

func TestSync_ContentSecretKey_NeverPrintedNorRecorded(t *testing.T) {
	t.Parallel()
	w, s3 := s3World(t)
	run := w.run
	var out strings.Builder
	for _, args := range [][]string{{"sync", "--dry-run"}, {"sync"}, {"sync", "--full", "--json"}, {"status", "--json"}, {"sync", "--help"}} {
		r := run(args...)
		out.WriteString(r.stdout + r.stderr)
		if args[len(args)-1] != "--help" && r.code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if _, _, ok := s3.ReadRaw(t, "policies/학칙/policy.md"); !ok {
		t.Fatalf("the bucket lacks policies/학칙/policy.md")
	}
	db, err := os.ReadFile(w.db)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"output": out.String(), "registry": string(db)} {
		if strings.Contains(text, mirrortest.SecretAccessKey) {
			t.Errorf("the secret key is in the %s", where)
		}
	}
	if !strings.Contains(out.String(), "s3 bucket "+mirrortest.Bucket) {
		t.Errorf("the output does not name the bucket:\n%s", out.String())
	}
}

func TestConfig_BadContentSetting_Exit2NamesIt(t *testing.T) {
	t.Parallel()
	for setting, env := range map[string]map[string]string{
		"CONTENT_BUCKET":            {"CONTENT_BUCKET": "Not_A_Bucket"},
		"CONTENT_PREFIX":            {"CONTENT_DIR": "x", "CONTENT_PREFIX": "/abs/"},
		"CONTENT_ENDPOINT":          {"CONTENT_BUCKET": "policies", "CONTENT_ENDPOINT": "ftp://host"},
		"CONTENT_SECRET_ACCESS_KEY": {"CONTENT_BUCKET": "policies", "CONTENT_ACCESS_KEY_ID": "AKIA0000000000000000"},
	} {
		w := newWorld(t)
		seed(w)
		for k, v := range env {
			w.env[k] = v
		}
		r := w.run("sync")
		if r.code != exitUsage || !strings.Contains(r.stderr, setting) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", env, r.code, r.stderr, setting)
		}
	}
}

// CONTENT_DIR naming a regular file (or a folder that cannot be made) is
// wrong configuration: exit 2 naming CONTENT_DIR and the form it wants (a
// folder), not a failed run (review).
func TestSync_ContentDirIsAFile_Exit2NamingIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	f := t.TempDir() + "/not-a-folder"
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.env["CONTENT_DIR"] = f
	r := w.run("sync")
	t.Logf("exit %d\n%s\n%s", r.code, r.stdout, tailOf(r.stderr, 2))
	if r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, "CONTENT_DIR") {
		t.Errorf("sync with CONTENT_DIR a file: exit %d; want 2 naming CONTENT_DIR", r.code)
	}
}

func tailOf(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// CONTENT_ENDPOINT with the bucket as its path (as R2's bucket page shows
// the S3 URL) put every key outside the prefix and failed every run with
// 404 NoSuchKey: it is configuration, exit 2 naming the setting (review).
func TestSync_ContentEndpointWithTheBucketAsPath_Exit2NamingIt(t *testing.T) {
	t.Parallel()
	w, s3 := s3World(t)
	w.env["CONTENT_ENDPOINT"] = s3.URL + "/" + mirrortest.Bucket
	r := w.run("sync")
	if r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, "CONTENT_ENDPOINT") {
		t.Errorf("exit %d; want 2 naming CONTENT_ENDPOINT\n%s", r.code, tailOf(r.stdout+r.stderr, 3))
	}
}

// A CONTENT_BUCKET that does not exist, or S3 keys the store refuses, is
// configuration: exit 2 naming the setting (review: the message named
// none), the secret never printed.
func TestSync_ContentMissingBucketOrRefusedKeys_Exit2NamingTheSetting(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		env     map[string]string
		fail    int
		setting string
	}{
		"missing bucket": {env: map[string]string{"CONTENT_BUCKET": "no-such-bucket"}, setting: "CONTENT_BUCKET"},
		"keys refused":   {fail: http.StatusForbidden, setting: "CONTENT_ACCESS_KEY_ID"},
	} {
		w, s3 := s3World(t)
		for k, v := range c.env {
			w.env[k] = v
		}
		if c.fail != 0 {
			s3.Faults.FailNext(mirrortest.OpList, 100, c.fail)
			s3.Faults.FailNext(mirrortest.OpPut, 100, c.fail)
		}
		r := w.run("sync")
		t.Logf("%s: exit %d\n%s", name, r.code, tailOf(r.stdout+r.stderr, 3))
		if r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, c.setting) {
			t.Errorf("%s: exit %d; want 2 naming %s", name, r.code, c.setting)
		}
		if strings.Contains(r.stdout+r.stderr, mirrortest.SecretAccessKey) {
			t.Errorf("%s: the secret is printed", name)
		}
	}
}

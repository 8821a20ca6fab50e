package mirror_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/mirror/mirrortest"
)

func TestFolder_Contract(t *testing.T) {
	t.Parallel()
	mirrortest.Run(t, func(t *testing.T) mirrortest.Harness {
		dir := t.TempDir()
		f, err := mirror.NewFolder(dir, mirror.DefaultPrefix)
		if err != nil {
			t.Fatal(err)
		}
		return mirrortest.Harness{
			Target: f,
			Prefix: mirror.DefaultPrefix,
			PutRaw: func(t testing.TB, key string, body []byte) { mustWriteFile(t, filepath.Join(dir, key), body) },
			ReadRaw: func(t testing.TB, key string) ([]byte, map[string]string, bool) {
				return readFile(t, filepath.Join(dir, key))
			},
		}
	})
}

func TestMemory_Contract(t *testing.T) {
	t.Parallel()
	mirrortest.Run(t, func(t *testing.T) mirrortest.Harness {
		m := mirrortest.NewMemory(mirror.DefaultPrefix)
		return mirrortest.Harness{Target: m, Prefix: mirror.DefaultPrefix, PutRaw: m.PutRaw, ReadRaw: m.ReadRaw}
	})
}

func TestS3_Contract(t *testing.T) {
	t.Parallel()
	mirrortest.Run(t, func(t *testing.T) mirrortest.Harness {
		srv := mirrortest.NewS3Server(t)
		cfg := s3Config(srv)
		impatient := cfg
		impatient.TryTimeout = 200 * time.Millisecond
		return mirrortest.Harness{
			Target:           mustS3(t, mirror.WithPageSize(cfg, 10)),
			Prefix:           cfg.Prefix,
			PutRaw:           srv.PutRaw,
			ReadRaw:          srv.ReadRaw,
			Server:           srv,
			MaxRetries:       cfg.MaxRetries,
			Impatient:        mustS3(t, impatient),
			ImpatientTimeout: impatient.TryTimeout,
			Secrets:          []string{cfg.AccessKeyID, cfg.SecretAccessKey},
		}
	})
}

// s3Config points a target at srv with retries that do not wait.
func s3Config(srv *mirrortest.S3Server) mirror.Config {
	return mirror.Config{
		Bucket:          mirrortest.Bucket,
		Endpoint:        srv.URL,
		AccessKeyID:     mirrortest.AccessKeyID,
		SecretAccessKey: mirrortest.SecretAccessKey,
		Prefix:          mirror.DefaultPrefix,
		HTTPClient:      srv.Client,
		MaxRetries:      3,
		TryTimeout:      20 * time.Second, // a loaded machine is not a fault

		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}
}

func mustWriteFile(t testing.TB, path string, body []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) ([]byte, map[string]string, bool) {
	t.Helper()
	body, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return body, nil, true
}

package main

import (
	"io"
	"log/slog"

	"github.com/knue/syncjob/internal/redact"
)

// newLogger builds the process logger: JSON unless on a terminal (or as
// configured), with every secret value replaced wherever it appears.
func newLogger(cfg Config, w io.Writer, terminal bool) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	secrets := cfg.secrets()
	opts := &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			return redactAttr(a, secrets)
		},
	}
	if cfg.LogFormat == "text" || (cfg.LogFormat == "auto" && terminal) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func redactAttr(a slog.Attr, secrets []string) slog.Attr {
	if len(secrets) == 0 {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact.String(v.String(), secrets...))
	case slog.KindAny:
		// Errors are where a secret could hide (a URL, a server's echo);
		// the other values logged are our own counts and names.
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redact.String(err.Error(), secrets...))
		}
	}
	return a
}

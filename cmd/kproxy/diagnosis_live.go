package main

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/diagnose"
)

// diagnosisLogger logs each finding at warn level, once, as serve finds
// it. For people (console) the message is the finding's text block; for
// machines (json) the message is the explanation and the fields carry the
// rest, with the snake_case keys used across kproxy.
func diagnosisLogger(log *zap.Logger, format string) func(diagnose.Finding) {
	if format == "json" {
		return func(f diagnose.Finding) {
			ids := make([]string, 0, len(f.Members))
			for _, m := range f.Members {
				ids = append(ids, m.MemberID)
			}
			log.Warn(f.Explanation, zap.String("group", f.Group), zap.String("kind", string(f.Kind)),
				zap.String("severity", string(f.Severity)), zap.String("at", f.At), zap.String("finding_id", f.ID),
				zap.Strings("member_ids", ids), zap.Any("partitions", f.Partitions), zap.Any("evidence", f.Evidence),
				zap.String("suggestion", f.Suggestion), zap.Strings("links", f.Links))
		}
	}
	return func(f diagnose.Finding) {
		if log.Core().Enabled(zap.WarnLevel) {
			log.Warn(strings.TrimSuffix(diagnose.TextBlock(f), "\n"))
		}
	}
}

// tickEvery is how often serve advances the diagnosis clock when no
// exchange arrives, and tickLag how far behind the wall clock it stays:
// an exchange still in the observer queue must not be overtaken, or a
// warning could be raised that the exchange would have prevented, and
// replaying the journal would not raise it.
const (
	tickEvery = time.Second
	tickLag   = time.Second
)

// tickDiagnosis advances the live diagnosis every tickEvery until ctx is
// done, so that a member falling silent is warned about on time even when
// no other exchange arrives.
func tickDiagnosis(ctx context.Context, live *diagnose.Live) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			live.Advance(now.Add(-tickLag))
		}
	}
}

package main

import (
	"strings"

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
				zap.Strings("member_ids", ids), zap.Any("members", f.Members), zap.Any("partitions", f.Partitions), zap.Any("evidence", f.Evidence),
				zap.String("suggestion", f.Suggestion), zap.Strings("links", f.Links))
		}
	}
	return func(f diagnose.Finding) {
		if log.Core().Enabled(zap.WarnLevel) {
			log.Warn(strings.TrimSuffix(diagnose.TextBlock(f), "\n"))
		}
	}
}

// stormFindingsLogger logs, in the timeline, a "findings" block after
// each storm: the causes found from its first rebalance to its end. For
// people (console) one block of lines; for machines (json) one entry
// whose fields name the findings (each was logged whole by "diagnosis").
func stormFindingsLogger(log *zap.Logger, format string) func(string, []diagnose.Finding) {
	if format == "json" {
		return func(group string, fs []diagnose.Finding) {
			ids := make([]string, 0, len(fs))
			for _, f := range fs {
				ids = append(ids, f.ID)
			}
			log.Info("findings after the storm", zap.String("group", group), zap.String("kind", "storm_findings"),
				zap.Strings("finding_ids", ids))
		}
	}
	return func(group string, fs []diagnose.Finding) {
		if !log.Core().Enabled(zap.InfoLevel) {
			return
		}
		log.Info(stormFindingsBlock(group, fs))
	}
}

// stormFindingsBlock is the text of the findings block after a storm:
// a header, then each finding's text block indented.
func stormFindingsBlock(group string, fs []diagnose.Finding) string {
	var b strings.Builder
	b.WriteString(group + " findings after the storm:")
	if len(fs) == 0 {
		b.WriteString(" none")
	}
	for _, f := range fs {
		for _, line := range strings.Split(strings.TrimSuffix(diagnose.TextBlock(f), "\n"), "\n") {
			b.WriteString("\n    " + line)
		}
	}
	return b.String()
}

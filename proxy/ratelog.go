package proxy

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// defaultRateLogEvery is how often rateLog logs one kind of line at most.
const defaultRateLogEvery = time.Second

// rateLog limits lines that can repeat as fast as clients can connect
// (refused connections, oversized frames, timeouts): each kind is logged at
// most once per interval, and the next line logged says how many were
// suppressed since the previous one (suppressed). What is suppressed is
// still counted in Stats.
type rateLog struct {
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*rateKind
}

type rateKind struct {
	last       time.Time
	suppressed int
}

// log logs msg at lvl unless a line of the same kind was logged less than
// an interval ago, in which case it only counts it.
func (r *rateLog) log(l *zap.Logger, lvl zapcore.Level, kind, msg string, fields ...zap.Field) {
	ce := l.Check(lvl, msg)
	if ce == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if r.kinds == nil {
		r.kinds = make(map[string]*rateKind)
	}
	k := r.kinds[kind]
	if k == nil {
		k = &rateKind{}
		r.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < r.every {
		k.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := k.suppressed
	k.last, k.suppressed = now, 0
	r.mu.Unlock()
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	ce.Write(fields...)
}

// warn is log at warn level.
func (r *rateLog) warn(l *zap.Logger, kind, msg string, fields ...zap.Field) {
	r.log(l, zapcore.WarnLevel, kind, msg, fields...)
}

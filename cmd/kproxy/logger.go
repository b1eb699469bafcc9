package main

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds kproxy's logger writing to w: format "console" is for
// people (local time to the millisecond, level, message, fields), "json" is
// for machines (one object per line, RFC 3339 nanosecond timestamps,
// durations in seconds). level is debug, info, warn or error.
func newLogger(w io.Writer, format, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	var enc zapcore.Encoder
	switch format {
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		ec.CallerKey = zapcore.OmitKey
		ec.StacktraceKey = zapcore.OmitKey
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "time"
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		ec.CallerKey = zapcore.OmitKey
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q: want console or json", format)
	}
	ws := zapcore.Lock(zapcore.AddSync(w))
	return zap.New(zapcore.NewCore(enc, ws, lvl), zap.ErrorOutput(ws)), nil
}

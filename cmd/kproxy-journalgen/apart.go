package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/journal"
)

// With -generator-process, -live runs the traffic generator in a child
// process (this program with -emit), as serve's clients and brokers are
// processes of their own: what the generator holds and allocates then
// counts neither in the live heap measured nor in the heap goal that the
// collector sets from it, and serve's share is measured alone. The child
// writes each exchange to its standard output as a journal exchange
// payload (docs/journal-format.md, type 1) after its length (4 bytes,
// big-endian); the parent reads each into a buffer of its own (the proxy
// keeps a buffer per frame), parses it (its client address and id are
// fresh strings, as the proxy's client id is) and hands the exchanges on
// in batches, as generate does.

// emitRun writes tr's exchanges to w, each a payload after its length,
// until a write fails: the reader has gone.
func emitRun(tr *synth.Traffic, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var rec []byte
	for {
		x := tr.Next()
		rec = binary.BigEndian.AppendUint32(rec[:0], uint32(journal.ExchangePayloadLen(x)))
		rec = journal.AppendExchangePayload(rec, x)
		if _, err := bw.Write(rec); err != nil {
			return fmt.Errorf("emit: %w", err)
		}
	}
}

// generatorArgs are the flags that make a child's -emit generate the
// traffic o describes.
func generatorArgs(o synth.Options) []string {
	return []string{"-emit", "-seed", strconv.FormatUint(o.Seed, 10), "-groups", strconv.Itoa(o.Groups),
		"-members", strconv.Itoa(o.MaxMembers), "-mix", o.Mix.String(), "-heartbeat", o.Heartbeat.String(),
		"-jobs", strconv.Itoa(o.Jobs)}
}

// generateApart starts this program's executable as a child that
// generates o's traffic, and returns its exchanges in batches until ctx is
// done, which kills the child. When the child's stream ends or breaks,
// the channel is closed and *failed says why.
func generateApart(ctx context.Context, o synth.Options) (batches <-chan []*decode.Exchange, failed *error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("generator process: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, generatorArgs(o)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("generator process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("generator process: %w", err)
	}
	ch, failure := make(chan []*decode.Exchange, 4), new(error)
	go func() {
		defer close(ch)
		err := readExchanges(ctx, bufio.NewReaderSize(stdout, 1<<16), ch)
		// A child still writing would block Wait on its full pipe: stop
		// it first. One that ended by itself says how in Wait's error.
		_ = cmd.Process.Kill()
		if werr := cmd.Wait(); werr != nil {
			err = fmt.Errorf("%w (the child: %v)", err, werr)
		}
		*failure = fmt.Errorf("generator process: %w", err)
	}()
	return ch, failure, nil
}

// maxPayload bounds an exchange read from the generator's process: its
// frames are a few kilobytes, so a larger length is a broken stream.
const maxPayload = 64 << 20

// errStreamEnded is a generator's stream ending: the child never stops by
// itself, so it failed. It is not io.EOF, which would end the run as if
// the traffic had.
var errStreamEnded = errors.New("its stream ended")

// readExchanges reads length-prefixed exchange payloads from r and sends
// them to ch in batches of 256 until r ends or fails, or ctx is done.
func readExchanges(ctx context.Context, r io.Reader, ch chan<- []*decode.Exchange) error {
	var size [4]byte
	for {
		b := make([]*decode.Exchange, 256)
		for i := range b {
			if _, err := io.ReadFull(r, size[:]); err == io.EOF {
				return errStreamEnded
			} else if err != nil {
				return err
			}
			n := binary.BigEndian.Uint32(size[:])
			if n > maxPayload {
				return fmt.Errorf("an exchange of %d bytes, more than %d: the stream is broken", n, maxPayload)
			}
			p := make([]byte, n)
			if _, err := io.ReadFull(r, p); err != nil {
				return err
			}
			b[i] = new(decode.Exchange)
			if err := journal.ParseExchangePayload(b[i], p); err != nil {
				return err
			}
		}
		select {
		case ch <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

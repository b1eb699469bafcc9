//go:build linux

package proxy

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// The streamed bodies' path on Linux: splice(2) through a pipe, called
// directly rather than through (*net.TCPConn).ReadFrom, to make raw
// system calls. Go's own calls go through the scheduler's entersyscall,
// and the first after the process was idle wakes the runtime's monitor
// thread (sysmon), which then polls every 20 µs for a while: between a
// proxy's frames every thread is idle, so that would be several wake-ups
// per frame, a large share of kproxy's CPU (docs/benchmarks.md, Changes
// to the forwarding path). These calls never
// block (the sockets and the pipe are non-blocking; waiting is done by the
// poller, through syscall.RawConn), so they need no handoff. Reads and
// writes of the frames' starts are made the same way (rawio_linux.go).
//
// SPLICE_F_MORE and MSG_MORE (TCP holding a partial segment until the rest
// of the frame follows) are not used: on an idle host they cost more CPU
// than they save (docs/benchmarks.md, Changes to the forwarding path).

// splice(2) flags.
const (
	spliceMove     = 0x1
	spliceNonblock = 0x2
)

// pipeSize is the capacity asked for the splice pipes: 1 MiB, the default
// /proc/sys/fs/pipe-max-size, as Go's own splice asks.
const pipeSize = 1 << 20

// pipe is a pipe bodies are spliced through; it is empty whenever it is in
// the pool. Its descriptors are closed when it is collected.
type pipe struct{ r, w int }

var pipes = sync.Pool{New: func() any {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return nil
	}
	// A smaller pipe (the kernel may refuse 1 MiB) works, with more calls.
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(fds[0]), syscall.F_SETPIPE_SZ, pipeSize) //nolint:errcheck
	p := &pipe{r: fds[0], w: fds[1]}
	runtime.AddCleanup(p, func(fds [2]int) { syscall.Close(fds[0]); syscall.Close(fds[1]) }, fds)
	return p
}}

// rawSplice is splice(2) without offsets, as a raw system call (see above).
func rawSplice(rfd, wfd, n, flags int) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_SPLICE, uintptr(rfd), 0, uintptr(wfd), 0, uintptr(n), uintptr(flags))
	return int(r), e
}

// spliceBody moves the next n bytes of src to dst with splice(2), through
// a pooled pipe, and returns how many it wrote to dst. Read deadlines on
// src and write deadlines on dst apply, as to their reads and writes.
func spliceBody(dst, src *net.TCPConn, n int) (int64, error) {
	sc, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	p, _ := pipes.Get().(*pipe)
	if p == nil {
		return 0, os.NewSyscallError("pipe2", syscall.EMFILE)
	}
	var written int64
	inPipe := 0
	for n > 0 {
		var errno syscall.Errno
		moved := 0
		err := sc.Read(func(fd uintptr) bool {
			for {
				moved, errno = rawSplice(int(fd), p.w, min(n, pipeSize), spliceMove|spliceNonblock)
				switch errno {
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false // wait for the socket to be readable
				}
				return true
			}
		})
		switch {
		case err != nil:
		case errno != 0:
			err = os.NewSyscallError("splice", errno)
		case moved == 0:
			err = io.ErrUnexpectedEOF // the peer closed mid-frame
		}
		if err != nil {
			pipes.Put(p) // empty: the previous round was written whole
			return written, err
		}
		n -= moved
		inPipe += moved
		err = dc.Write(func(fd uintptr) bool {
			for inPipe > 0 {
				m, e := rawSplice(p.r, int(fd), inPipe, spliceMove|spliceNonblock)
				switch e {
				case 0:
					inPipe -= m
					written += int64(m)
				case syscall.EINTR:
				case syscall.EAGAIN:
					return false // wait for the socket to be writable
				default:
					errno = e
					return true
				}
			}
			return true
		})
		if err == nil && errno != 0 {
			err = os.NewSyscallError("splice", errno)
		}
		if err != nil {
			if inPipe == 0 {
				pipes.Put(p)
			} // else dropped with its bytes: its cleanup closes it
			return written, err
		}
	}
	pipes.Put(p)
	return written, nil
}

// writeRaw writes b whole to c with send(2), as raw system calls, waiting
// for c to be writable through the poller.
func writeRaw(c *net.TCPConn, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	written := 0
	var errno syscall.Errno
	err = rc.Write(func(fd uintptr) bool {
		for written < len(b) {
			m, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[written])), uintptr(len(b)-written),
				uintptr(syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL), 0, 0)
			switch e {
			case 0:
				written += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("sendto", errno)
	}
	return written, err
}

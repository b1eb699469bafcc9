package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// journalFullEnv makes TestServeJournalFullChild run: it is the child of
// TestServeSIGTERMAfterJournalFailure.
const journalFullEnv = "KPROXY_TEST_JOURNAL_FULL"

// TestServeSIGTERMAfterJournalFailure: a journal that cannot write (here a
// file size limit, as a full disk) does not make serve fail: after SIGTERM
// it exits 0, since kproxy forwarded everything. Run in a child process,
// whose file size limit does not hurt the other tests.
func TestServeSIGTERMAfterJournalFailure(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeJournalFullChild$", "-test.v")
	cmd.Env = append(os.Environ(), journalFullEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestServeJournalFullChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestServeJournalFullChild runs serve with a journal under a 2 KiB file
// size limit, makes observed traffic until the journal reports a write
// error, sends itself SIGTERM and requires serve to return nil.
func TestServeJournalFullChild(t *testing.T) {
	dir := os.Getenv(journalFullEnv)
	if dir == "" {
		t.Skip("run by TestServeSIGTERMAfterJournalFailure")
	}
	signal.Ignore(syscall.SIGXFSZ) // so writes fail with EFBIG instead
	lim := syscall.Rlimit{Cur: 2048, Max: 2048}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	c := startKfake(t, kfake.NumBrokers(1))
	admin, listen := freeAddr(t), freeAddr(t)
	done := make(chan error, 1)
	go func() {
		_, err := runKproxy(t, "serve", "--upstream", c.ListenAddrs()[0], "--listen", listen,
			"--admin", admin, "--log-level", "error", "--broker-port-base", strconv.Itoa(portOf(t, freeAddr(t))),
			"--journal", filepath.Join(dir, "journal"), "--journal-fsync", "always")
		done <- err
	}()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("serve returned before serving: %v", err)
		default:
		}
		if resp, err := http.Get("http://" + admin + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("admin server never answered")
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(listen))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(20 * time.Second)
	for parseMetrics(t, httpGet(t, "http://"+admin+"/metrics"))["kproxy_journal_write_failed"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the journal never failed under a 2 KiB file size limit")
		}
		// FindCoordinator exchanges are observed, hence journaled.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		adm.FindGroupCoordinators(ctx, strings.Repeat("a-long-group-name-", 20))
		cancel()
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after SIGTERM with a failed journal = %v; want nil (exit 0)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
}

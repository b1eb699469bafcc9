//go:build e2e

package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape returns kproxy's /metrics at admin as name → value, for the
// metrics without labels.
func scrape(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	m, err := scrapeMetrics(admin)
	if err != nil {
		t.Fatalf("kproxy /metrics: %v", err)
	}
	return m
}

// scrapeMetrics is scrape returning its error.
func scrapeMetrics(admin string) (map[string]float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

// healthz returns the status and body of kproxy's /healthz at admin, or
// an error when it does not answer.
func healthz(admin string) (int, string, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + admin + "/healthz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

package main

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/timeline"
)

// TestAdminAccess: every answer carries nosniff and the page's
// Content-Security-Policy; a Host header naming neither an address,
// localhost nor a listed name is refused (DNS rebinding); with a token, every
// request but the probes must carry it, in a header or in the cookie that
// /?token= sets.
func TestAdminAccess(t *testing.T) {
	_, live := retainedTimeline(t, timeline.Retention{})
	const token = "s3cret-token"
	base := startAdmin(t, adminSources{timeline: live.Snapshot,
		access: adminAccess{hosts: []string{"kproxy.internal"}, token: token}})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, host string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	bearer := []string{"Authorization", "Bearer " + token}
	cases := []struct {
		name, path, host string
		header           []string
		want             int
	}{
		{"probe needs no token", "/healthz", "", nil, http.StatusOK},
		{"readiness needs no token", "/readyz", "", nil, http.StatusOK},
		{"api without token", "/api/groups", "", nil, http.StatusUnauthorized},
		{"metrics without token", "/metrics", "", nil, http.StatusUnauthorized},
		{"wrong token", "/api/groups", "", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"api with token", "/api/groups", "", bearer, http.StatusOK},
		{"metrics with token", "/metrics", "", bearer, http.StatusOK},
		{"cookie", "/api/groups", "", []string{"Cookie", tokenCookie + "=" + token}, http.StatusOK},
		{"login sets the cookie", "/?token=" + token, "", nil, http.StatusSeeOther},
		{"login with a wrong token", "/?token=nope", "", nil, http.StatusUnauthorized},
		{"rebinding host refused", "/api/groups", "attacker.example:9644", bearer, http.StatusMisdirectedRequest},
		{"rebinding host refused for probes too", "/healthz", "attacker.example", nil, http.StatusMisdirectedRequest},
		{"localhost", "/api/groups", "localhost:9644", bearer, http.StatusOK},
		{"IPv6 loopback", "/api/groups", "[::1]:9644", bearer, http.StatusOK},
		{"an address", "/healthz", "10.1.2.3:9644", nil, http.StatusOK},
		{"listed name", "/api/groups", "KPROXY.internal:9644", bearer, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(tc.path, tc.host, tc.header...)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d; want %d", resp.StatusCode, tc.want)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q; want nosniff", got)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q; want scripts from the server only", csp)
			}
			if tc.want == http.StatusSeeOther {
				if c := resp.Header.Get("Set-Cookie"); !strings.Contains(c, tokenCookie+"="+token) || !strings.Contains(c, "HttpOnly") {
					t.Errorf("Set-Cookie %q; want the token, HttpOnly", c)
				}
			}
		})
	}
}

// TestBeyondLoopback: serve warns about an admin server without a token
// when it listens on any address but loopback.
func TestBeyondLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9644": false, "[::1]:9644": false, "0.0.0.0:9644": true, "[::]:9644": true, "10.0.0.7:9644": true} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := beyondLoopback(a); got != want {
			t.Errorf("beyondLoopback(%s) = %v; want %v", addr, got, want)
		}
	}
}

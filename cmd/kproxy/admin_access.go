package main

import (
	"crypto/subtle"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/kproxy-dev/kproxy/internal/printable"
)

// adminAccess says who may read the admin server, and what every answer
// tells the browser.
type adminAccess struct {
	// hosts are the names, besides localhost and IP addresses, that a
	// request's Host header may give. A page of another site whose name an
	// attacker points at this host (DNS rebinding) sends its own name, so
	// it is refused; an address typed or scraped (a Prometheus target, a
	// kubelet probe) is an IP address or a name listed here.
	hosts []string
	// token, when not empty, is the bearer token every request but the
	// probes (/healthz, /readyz) must carry: in an Authorization header
	// (Prometheus' bearer_token_file), or in the cookie a browser gets by
	// opening /?token=TOKEN once.
	token string
}

// livePageCSP is the Content-Security-Policy of every admin answer: scripts
// and styles only from the server itself (the page's inline style
// attributes aside), no framing, nothing sent elsewhere.
const livePageCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// tokenCookie is the cookie that carries the token for a browser.
const tokenCookie = "kproxy_admin_token"

// guard serves next to the requests a allows, with the security headers on
// every answer.
func (a adminAccess) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", livePageCSP)
		h.Set("Referrer-Policy", "no-referrer")
		if !a.hostAllowed(r.Host) {
			http.Error(w, "admin: Host "+printable.Quote(r.Host)+" is not one of this server's names; "+
				"list it with --admin-hosts", http.StatusMisdirectedRequest)
			return
		}
		if a.token == "" || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.URL.Path == "/" && a.tokenMatches(t) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: t, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if !a.authorized(r) {
			h.Set("WWW-Authenticate", `Bearer realm="kproxy admin"`)
			http.Error(w, "admin: a bearer token is required (Authorization: Bearer TOKEN, or open /?token=TOKEN once)",
				http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a request naming host (HOST or HOST:PORT)
// may be served.
func (a adminAccess) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0: no browser sends none
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return slices.ContainsFunc(a.hosts, func(h string) bool { return strings.EqualFold(h, host) })
}

// authorized reports whether r carries the token.
func (a adminAccess) authorized(r *http.Request) bool {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && a.tokenMatches(t) {
		return true
	}
	c, err := r.Cookie(tokenCookie)
	return err == nil && a.tokenMatches(c.Value)
}

func (a adminAccess) tokenMatches(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(a.token)) == 1
}

package palisade

// Over https with a private CA and client certificates, to a cluster with auth:
// PALISADE_TLS_ENDPOINTS, the PEM files PALISADE_CA, PALISADE_CERT, PALISADE_KEY,
// PALISADE_ROGUE_CA (a CA that did not sign the nodes) and the bearer token PALISADE_TOKEN,
// set by test/clients/go-client.test.ts with a cluster that requires them all.

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func tlsCluster(t *testing.T) []string {
	return endpointsFrom(t, "PALISADE_TLS_ENDPOINTS", "PALISADE_TOKEN", "PALISADE_CA", "PALISADE_CERT", "PALISADE_KEY", "PALISADE_ROGUE_CA")
}

// withTLS configures a client with the CA, the client certificate and the token.
func withTLS(t *testing.T) func(*Config) {
	cfg, err := TLSConfig(os.Getenv("PALISADE_CA"), os.Getenv("PALISADE_CERT"), os.Getenv("PALISADE_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.TLS = cfg
		c.Token = os.Getenv("PALISADE_TOKEN")
	}
}

func TestALockOverMutualTLSWithAPrivateCA(t *testing.T) {
	eps := tlsCluster(t)
	c := newClusterClient(t, eps, withTLS(t))
	s := newClusterSession(t, c)
	m := NewMutex(s, unique("tls"))
	if err := m.Lock(within(t, 5*time.Second)); err != nil || m.Token() == 0 {
		t.Fatal(err)
	}
	_ = m.Unlock(context.Background())
	// ws(s):// URLs name the same port.
	wss := make([]string, len(eps))
	for i, e := range eps {
		wss[i] = strings.Replace(e, "https://", "wss://", 1)
	}
	if _, err := newClusterClient(t, wss, withTLS(t)).Status(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWithoutAClientCertificateTheNodesRefuse(t *testing.T) {
	eps := tlsCluster(t)
	cfg, _ := TLSConfig(os.Getenv("PALISADE_CA"), "", "")
	c := newClusterClient(t, eps, func(c *Config) { c.TLS = cfg })
	_, err := c.Status(within(t, time.Second))
	if !errors.Is(err, ErrUnavailable) || IsIndefinite(err) {
		t.Fatalf("got %v", err)
	}
}

func TestNodesSignedByAnotherCAAreNotTrusted(t *testing.T) {
	eps := tlsCluster(t)
	cfg, _ := TLSConfig(os.Getenv("PALISADE_ROGUE_CA"), os.Getenv("PALISADE_CERT"), os.Getenv("PALISADE_KEY"))
	c := newClusterClient(t, eps, func(c *Config) { c.TLS = cfg })
	_, err := c.Status(within(t, time.Second))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("got %v", err)
	}
}

func TestABearerTokenIsSent(t *testing.T) {
	eps := tlsCluster(t)
	withToken := withTLS(t)
	without := newClusterClient(t, eps, func(c *Config) { withToken(c); c.Token = "" })
	if _, err := NewSession(within(t, 2*time.Second), without); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("without the token: %v", err)
	}
	s := newClusterSession(t, newClusterClient(t, eps, withToken))
	if err := NewMutex(s, unique("auth")).TryLock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

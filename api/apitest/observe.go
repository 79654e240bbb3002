package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/streams"
)

// Scrape returns what m's /metrics says now, scraped over HTTP.
func Scrape(tb testing.TB, m *api.Metrics) string {
	tb.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(body)
}

// LiveSnapshot opens GET /api/v1/system/live and returns its first snapshot.
func (c *Client) LiveSnapshot(headers ...string) streams.LiveSnapshot {
	c.tb.Helper()
	st, r := c.OpenStream(api.Prefix+"/system/live", headers...)
	if st == nil {
		c.tb.Fatalf("the live stream: %d %s", r.Status, r.Body)
	}
	var snap streams.LiveSnapshot
	if m := st.NextEvent(c.tb); m.Event != "system.live" || json.Unmarshal([]byte(m.Data), &snap) != nil {
		c.tb.Fatalf("the live stream's first event: %+v; want a system.live snapshot", m)
	}
	return snap
}

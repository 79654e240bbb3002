package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// sseEvent is one event read from a stream.
type sseEvent struct {
	Type string
	Data string
}

// follow opens the stream at path with s's session and returns its
// events as they arrive; the stream is closed when the test ends.
func follow(t *testing.T, s session, path string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequest("GET", s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(s.cookie, ": ")
	req.Header.Set(k, v)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, res.Status)
	}
	events := make(chan sseEvent, 1024) // room for a flood's events while the test reads none
	go func() {
		defer close(events)
		var ev sseEvent
		for sc := bufio.NewScanner(res.Body); sc.Scan(); {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.Type != "":
				select {
				case events <- ev:
				case <-t.Context().Done():
					return
				}
				ev = sseEvent{}
			}
		}
	}()
	return events
}

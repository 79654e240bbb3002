package main

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadFindsEventsCutAnywhere feeds read a stream of two apikey.created
// events, in the chunked framing the server sends, cut into two writes at
// every byte: each event's arrival is noted once, whichever read brings
// its round's number, and the end of the stream is counted.
func TestReadFindsEventsCutAnywhere(t *testing.T) {
	body := "e\r\nretry: 3000\n\n\r\n" +
		"5a\r\nid: 1-1\nevent: apikey.created\ndata: {\"id\":\"a\",\"name\":\"streamload-1\",\"prefix\":\"brk_x\"}\n\n\r\n" +
		"2\r\n:\n\r\n" +
		"5b\r\nid: 1-2\nevent: apikey.created\ndata: {\"id\":\"b\",\"name\":\"streamload-12\",\"prefix\":\"brk_y\"}\n\n\r\n"
	for cut := range len(body) + 1 {
		l := &load{n: 1, base: time.Now().Add(-time.Second), arrive: make([]atomic.Int64, 12), got: make([]atomic.Int32, 13)}
		for range 13 {
			l.done = append(l.done, make(chan struct{}))
		}
		server, client := net.Pipe()
		ended := make(chan struct{})
		go func() { l.read(0, client, nil); close(ended) }()
		for _, part := range []string{body[:cut], body[cut:]} {
			if _, err := server.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		server.Close()
		<-ended
		for r := 1; r <= 12; r++ {
			want := int32(0)
			if r == 1 || r == 12 {
				want = 1
			}
			if got := l.got[r].Load(); got != want {
				t.Fatalf("cut at %d: round %d noted %d times, want %d", cut, r, got, want)
			}
		}
		if l.ended.Load() != 1 {
			t.Fatalf("cut at %d: %d streams ended, want 1", cut, l.ended.Load())
		}
	}
}

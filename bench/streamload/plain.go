package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"
)

// plainEnv, set in its environment, makes streamload the peer server:
// plain net/http Server-Sent Events, the least a Go server does to hold a
// stream and deliver an event to it, on the paths the load uses.
const plainEnv = "STREAMLOAD_PLAIN"

// servePlain serves the peer on a free loopback port and logs the line
// loadtool.Start waits for, as brain does:
//   - GET /api/v1/events: a stream; each published event is one write and
//     a flush; a comment line every heartbeat;
//   - POST /api/v1/apikeys: publishes apikey.created with the body's name
//     to every stream, then answers 201;
//   - GET /api/v1/system/live: a snapshot a second (goroutines, heap);
//   - POST /api/v1/auth/login and GET /api/v1/health: 200.
func servePlain() {
	heartbeat, err := time.ParseDuration(os.Getenv("BRAIN_STREAM_HEARTBEAT"))
	if err != nil {
		heartbeat = 15 * time.Second
	}
	var mu sync.Mutex
	subs := map[chan []byte]struct{}{}
	mux := http.NewServeMux()
	sse := func(w http.ResponseWriter) http.Flusher {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		return f
	}
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		ch := make(chan []byte, 64)
		mu.Lock()
		subs[ch] = struct{}{}
		mu.Unlock()
		defer func() { mu.Lock(); delete(subs, ch); mu.Unlock() }()
		f := sse(w)
		beat := time.NewTicker(heartbeat)
		defer beat.Stop()
		for {
			select {
			case ev := <-ch:
				if _, err := w.Write(ev); err != nil {
					return
				}
			case <-beat.C:
				if _, err := w.Write([]byte(":\n\n")); err != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
			f.Flush()
		}
	})
	mux.HandleFunc("POST /api/v1/apikeys", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Name string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, _ := json.Marshal(map[string]string{"name": body.Name})
		ev := []byte("event: apikey.created\ndata: " + string(data) + "\n\n")
		mu.Lock()
		for ch := range subs {
			select {
			case ch <- ev:
			default: // a stream that fell this far behind misses it, as brain would close it
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/v1/system/live", func(w http.ResponseWriter, r *http.Request) {
		f := sse(w)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if _, err := fmt.Fprintf(w, "event: system.live\ndata: {\"goroutines\":%d,\"heap_bytes\":%d}\n\n", runtime.NumGoroutine(), ms.HeapAlloc); err != nil {
				return
			}
			f.Flush()
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /api/v1/auth/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "brain_session", Value: "plain"})
	})
	mux.HandleFunc("GET /api/v1/health", func(w http.ResponseWriter, r *http.Request) {})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "msg=\"brain listening\" addr=%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

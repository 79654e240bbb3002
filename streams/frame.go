package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

var errNotJSON = errors.New("streams: an event's data is not JSON")

// appendEvent appends to dst one SSE message: its id line (none for ""),
// event line and data line. JSON with a line break is compacted first;
// data that is not JSON is refused with errNotJSON.
func appendEvent(dst []byte, id, event string, data json.RawMessage) ([]byte, error) {
	if bytes.ContainsAny(data, "\r\n") { // a line break would end the data: line; JSON needs none
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return dst, errNotJSON
		}
		data = buf.Bytes()
	}
	dst = slices.Grow(dst, len(id)+len(event)+len(data)+24)
	if id != "" {
		dst = append(append(append(dst, "id: "...), id...), '\n')
	}
	dst = append(append(append(dst, "event: "...), event...), '\n')
	return append(append(append(dst, "data: "...), data...), "\n\n"...), nil
}

// loop is the loop of a started stream, under [Pump]: each value from
// source goes to send, beat is called every heartbeat and ping on each
// probe, until ctx ends, closing is closed (shutdown is called), or send,
// beat or ping returns an error.
func loop[T any](ctx context.Context, heartbeat time.Duration, closing, probe <-chan struct{}, source <-chan T,
	send func(v T, ok bool) error, beat, ping func() error, shutdown func()) {
	every := time.NewTicker(heartbeat)
	defer every.Stop()
	for {
		var err error
		select {
		case v, ok := <-source:
			err = send(v, ok)
		case <-every.C:
			err = beat()
		case <-probe:
			err = ping()
		case <-closing:
			shutdown()
			return
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// errNotJSON is what appendEvent returns for data that is not JSON.
var errNotJSON = errors.New("streams: an event's data is not JSON")

// appendEvent appends to dst one SSE message: the event's id line (none
// when id is ""), its event line and its data line. data is JSON; JSON
// with a line break (which would end the data line) is compacted first,
// and data that is not JSON is refused with errNotJSON.
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

// Loop is the loop of a started stream, under [Pump]: each value from
// source goes to send (ok false once source is closed), beat is called
// every heartbeat, and ping each time probe delivers (the stream must
// prove now that its client is still there), until ctx ends (the client
// left), closing is closed (the server shuts down: shutdown is called, to
// send the stream's last event), or send, beat or ping returns an error.
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

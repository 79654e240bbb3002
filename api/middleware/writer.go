// This file records what a handler wrote: the status and the byte count
// the access log reports, and whether the response has started.
package middleware

import "net/http"

// recorder is the http.ResponseWriter the handlers inside [AccessLog] and
// [Stack] write to. It keeps the status and counts the body's bytes, and
// unwraps (http.ResponseController) to the connection's writer, so a
// stream can still flush, set deadlines and hijack.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

// WriteHeader keeps the first final status and passes it on; a later one
// is dropped, as net/http would drop it (with a warning in its log).
// Informational statuses (103 Early Hints) pass.
func (w *recorder) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.status != 0 {
		return
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Write counts p; a write before any header is a 200.
func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += n
	return n, err
}

// Flush sends what is buffered, when the writer underneath can.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap is the writer underneath, for http.ResponseController.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Status is the status written, 0 before any.
func (w *recorder) Status() int { return w.status }

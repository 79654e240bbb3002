package api

import "github.com/danielgtaylor/huma/v2"

// Renders reports how many times s has rendered the spec or the reference
// page.
func Renders(s *Server) int { return int(s.renders.Load()) }

// MetaLoginBackoff lets tests declare an operation that charges its plane
// from its handler.
const MetaLoginBackoff = metaLoginBackoff

// DeclaredAccess reports the access op declared, if any.
func DeclaredAccess(op *huma.Operation) (Access, bool) {
	a, ok := op.Metadata[metaAccess].(Access)
	return a, ok
}

// AddPanickingStream adds a stream at path whose serve panics, after the
// stream started when started is true.
func AddPanickingStream(s *Server, path string, started bool) {
	s.addStream(streamOperation{op: huma.Operation{OperationID: "panic" + path, Path: path}, serve: func(st *stream) {
		if started && st.start() != nil {
			return
		}
		panic("a bug in a stream")
	}})
}

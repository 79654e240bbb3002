package api

import (
	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// Renders reports how many times s has rendered the spec or the reference
// page.
func Renders(s *Server) int { return int(s.renders.Load()) }

// AddPanickingStream adds a stream at path whose serve panics, after the
// stream started when started is true.
func AddPanickingStream(s *Server, path string, started bool) {
	s.addStream(StreamOperation{Operation: huma.Operation{OperationID: "panic" + path, Path: path}, Serve: func(st *Stream) {
		if started && st.Start() != nil {
			return
		}
		panic("a bug in a stream")
	}})
}

// AddRouteParamStream adds a stream at path (with {id}) that,
// once started, sends its id URL parameter as read from st.r each time a
// value arrives on poke.
func AddRouteParamStream(s *Server, path string, poke chan struct{}) {
	s.addStream(StreamOperation{Operation: huma.Operation{OperationID: "param" + path, Path: path}, Events: []EventType{{Name: "param", Data: ""}}, Serve: func(st *Stream) {
		if st.Start() != nil {
			return
		}
		for range poke {
			if st.st.sendValue("param", chi.URLParam(st.Request(), "id")) != nil {
				return
			}
		}
	}})
}

// BodyLimit is the largest body op accepts, as it declared it; 0 when it
// reads none.
func BodyLimit(op *huma.Operation) int64 { return bodyLimit(op) }

// StatusCodes maps each status the API names to its envelope code.
func StatusCodes() map[int]string { return codes }

// LiveSnapshotOf is the snapshot a live stream of s sends now.
func LiveSnapshotOf(s *Server) LiveSnapshot { return s.live.snapshot(s) }

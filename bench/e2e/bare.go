package main

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"os"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// rawJSON is a bare operation's answer: the bytes brain sent.
type rawJSON struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// serveBare serves, on addr, a huma v2 API on a chi v5 router with one
// GET operation per path of the answers file, each answering its bytes:
// the least a huma + chi service does for a request.
func serveBare(addr, answersFile string) {
	b, err := os.ReadFile(answersFile)
	if err != nil {
		log.Fatal(err)
	}
	var answers map[string][]byte
	if err := json.Unmarshal(b, &answers); err != nil {
		log.Fatal(err)
	}
	r := chi.NewMux()
	api := humachi.New(r, huma.DefaultConfig("bare", "1.0.0"))
	for path, body := range answers {
		huma.Register(api, huma.Operation{OperationID: "get" + path, Method: http.MethodGet, Path: path},
			func(context.Context, *struct{}) (*rawJSON, error) {
				return &rawJSON{ContentType: "application/json", Body: body}, nil
			})
	}
	log.Fatal(http.ListenAndServe(addr, r))
}

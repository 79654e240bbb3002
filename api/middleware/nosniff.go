package middleware

import chimw "github.com/go-chi/chi/v5/middleware"

// NoSniff sets X-Content-Type-Options: nosniff on every response, whoever
// writes it: a browser then never runs an error that echoes a request as
// HTML or script.
var NoSniff = chimw.SetHeader("X-Content-Type-Options", "nosniff")

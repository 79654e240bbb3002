package middleware

import chimw "github.com/go-chi/chi/v5/middleware"

// NoSniff sets X-Content-Type-Options: nosniff on every response.
var NoSniff = chimw.SetHeader("X-Content-Type-Options", "nosniff")

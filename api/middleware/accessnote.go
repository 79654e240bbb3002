// This file tells the access log what is learned of a request as it is
// served: its client's address and its user.
package middleware

import (
	"context"
	"net/http"
)

// NoteClientIP is a middleware that tells the access log the request's
// client address ([GetClientIP]). Mount it after [ClientIP].
func NoteClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := stateOf(r.Context()); st != nil {
			ip := GetClientIP(r.Context()) // before the lock, which GetClientIP takes
			st.mu.Lock()
			st.ip = ip
			st.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// NoteUser tells the access log the id of the request's user, once it
// is known. Outside [AccessLog] it does nothing.
func NoteUser(ctx context.Context, userID string) {
	if st := stateOf(ctx); st != nil {
		st.mu.Lock()
		st.user = userID
		st.mu.Unlock()
	}
}

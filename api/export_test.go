package api

// Renders reports how many times s has rendered the spec or the reference
// page.
func Renders(s *Server) int { return int(s.renders.Load()) }

// MetaLoginBackoff lets tests declare an operation that charges its plane
// from its handler.
const MetaLoginBackoff = metaLoginBackoff

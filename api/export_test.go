package api

// Renders reports how many times s has rendered the spec or the reference
// page.
func Renders(s *Server) int { return int(s.renders.Load()) }

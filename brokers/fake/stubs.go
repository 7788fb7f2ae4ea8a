package fake

import "net/http"

func (s *Server) serveAutoDL(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }

package dashboard

import (
	"github.com/berthdev/berth/internal/doctor"
)

// doctor runs berth doctor's checks for a release (namespace, name): its namespace, the
// cluster-wide objects that affect it, and the release itself. It only reads.
func (s *Server) doctor(r *request) (any, error) {
	ns, name, err := releaseKey(r)
	if err != nil {
		return nil, err
	}
	c := *r.clients
	c.Namespace = ns
	store, err := s.store(&c, ns)
	if err != nil {
		return nil, err
	}
	rep := doctor.Run(r.ctx, doctor.ClusterOf(&c, store), doctor.Options{Namespace: ns, Release: name})
	if rep.Findings == nil {
		rep.Findings = []doctor.Finding{}
	}
	return rep, nil
}

// controllerReleases lists the controller's Release objects of a namespace, or of every one.
func (s *Server) controllerReleases(r *request) (any, error) {
	return s.releaseObjectList(r, r.URL.Query().Get("namespace"))
}

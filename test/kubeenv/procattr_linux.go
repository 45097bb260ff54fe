package kubeenv

import "syscall"

// procAttr puts each component in its own process group (so a terminal's Ctrl-C reaches only us, and we
// stop the whole group) and, unless detached, has the kernel kill it if this process dies without
// cleaning up (a failed test, a panic, a timeout).
func procAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

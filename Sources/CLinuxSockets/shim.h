// Linux socket calls the broker's socket watcher needs and Swift's Glibc module does not export:
// epoll, eventfd and accept4 (declared here because Glibc's module is built without _GNU_SOURCE).
#ifndef CLINUXSOCKETS_SHIM_H
#define CLINUXSOCKETS_SHIM_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

#endif

/* A descriptor as a person and a script read it (fd_out.h). */
#include "cmd/engine/fd_out.h"

#include <stdlib.h>
#include <string.h>

#include "bundle/redact.h"
#include "bundle/text.h"

static void add_name(cJSON *o, const char *key, const char *comm)
{
	char *name = bundle_target_string(TARGET_NAME, TARGET_FOR_JSON, comm, strlen(comm));
	cJSON_AddStringToObject(o, key, name ? name : BUNDLE_REDACTED);
	free(name);
}

/* "; other end held by pid 4242 (cat) fd 1" */
static void put_holders(FILE *f, const struct fd_info *d, const char *what)
{
	if (d->npeers) {
		fprintf(f, "; %s held by", what);
		for (size_t i = 0; i < d->npeers; i++) {
			char comm[BUNDLE_NAME_TEXT_SIZE];
			fprintf(f, "%s pid %d (%s) fd %d", i ? "," : "", (int)d->peers[i].pid,
				bundle_target_name(d->peers[i].comm, comm, sizeof(comm)), d->peers[i].fd);
		}
		if (d->peers_more)
			fprintf(f, " and %zu more", d->peers_more);
	} else if (!d->peers_scan_cut) {
		fprintf(f, "; no process holds the %s", what);
	}
	if (d->peers_scan_cut)
		fputs(" (not every process's descriptors were looked at)", f);
}

/* Watched descriptors of an epoll set described one by one. */
#define EPOLL_DESCRIBED 4

void fd_out_text(FILE *f, const struct fd_info *d)
{
	switch (d->kind) {
	case FD_FILE:
		escape_text_put(d->target, f);
		break;
	case FD_PIPE:
		fprintf(f, "pipe%s%s%s", d->end ? ", " : "", d->end ? d->end : "", d->end ? " end" : "");
		put_holders(f, d, "other end");
		break;
	case FD_SOCKET:
		if (strcmp(d->proto, "unix") == 0) {
			fputs("unix socket", f);
			if (d->unix_path[0]) {
				fputc(' ', f);
				escape_text_put(d->unix_path, f);
			}
			fprintf(f, " %s", d->state);
			if (d->peer_inode)
				put_holders(f, d, "peer");
			else if (strcmp(d->state, "CONNECTED") == 0)
				fputs("; peer unknown (sock_diag did not name it: another network namespace?)", f);
		} else if (d->proto[0]) {
			fprintf(f, "%s %s -> %s %s", d->proto, d->local, d->peer, d->state);
		} else {
			fputs("socket (in none of this process's tcp, udp or unix tables)", f);
		}
		break;
	case FD_EPOLL:
		fputs("epoll set", f);
		if (d->nwatched) {
			/* The first few said for what they are (not another
			 * epoll set's own list). */
			fputs(" watching fd", f);
			for (size_t i = 0; i < d->nwatched; i++) {
				struct fd_info w;
				fprintf(f, "%s %d", i ? "," : "", d->watched[i]);
				if (i < EPOLL_DESCRIBED && fd_info_read(d->pid, d->watched[i], &w) == 0) {
					fputs(" (", f);
					if (w.kind == FD_EPOLL)
						fputs("epoll set", f);
					else
						fd_out_text(f, &w);
					fputc(')', f);
				}
			}
			if (d->watched_more)
				fprintf(f, " and %zu more", d->watched_more);
		} else {
			fputs(" watching nothing", f);
		}
		break;
	default:
		fputs(fd_kind_name(d->kind), f);
		break;
	}
}

void fd_out_brief(FILE *f, pid_t pid, int fd)
{
	struct fd_info d;
	fprintf(f, "%d", fd);
	if (fd_info_read(pid, fd, &d) == 0) {
		fputs(" (", f);
		fd_out_text(f, &d);
		fputc(')', f);
	}
}

/* Who holds the other end: {"held_by": [{pid, fd, comm}], "more", "scan_cut"} */
static cJSON *holders_json(const struct fd_info *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(o, "held_by");
	for (size_t i = 0; i < d->npeers; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "pid", d->peers[i].pid);
		cJSON_AddNumberToObject(p, "fd", d->peers[i].fd);
		add_name(p, "comm", d->peers[i].comm);
		cJSON_AddItemToArray(list, p);
	}
	cJSON_AddNumberToObject(o, "more", (double)d->peers_more);
	cJSON_AddBoolToObject(o, "scan_cut", d->peers_scan_cut);
	return o;
}

cJSON *fd_out_json(const struct fd_info *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "is", fd_kind_name(d->kind));
	cJSON_AddStringToObject(o, "target", d->target);
	if (d->kind == FD_PIPE) {
		if (d->end)
			cJSON_AddStringToObject(o, "end", d->end);
		cJSON_AddItemToObject(o, "other_end", holders_json(d));
	} else if (d->kind == FD_SOCKET && d->proto[0]) {
		cJSON_AddStringToObject(o, "proto", d->proto);
		if (strcmp(d->proto, "unix") == 0) {
			cJSON_AddStringToObject(o, "path", d->unix_path);
			if (d->peer_inode)
				cJSON_AddItemToObject(o, "peer", holders_json(d));
		} else {
			cJSON_AddStringToObject(o, "local", d->local);
			cJSON_AddStringToObject(o, "peer", d->peer);
		}
		cJSON_AddStringToObject(o, "state", d->state);
	} else if (d->kind == FD_EPOLL) {
		cJSON *fds = cJSON_AddArrayToObject(o, "watched");
		for (size_t i = 0; i < d->nwatched; i++)
			cJSON_AddItemToArray(fds, cJSON_CreateNumber(d->watched[i]));
	}
	return o;
}

/* SPDX-License-Identifier: MIT */
/*
 * Field offsets of the runtime's structs for a Go binary without DWARF
 * (built with -w, or -s -w), one row per Go release (amd64).
 *
 * Each row is what the DWARF of the fixture built by that release's Debian
 * toolchain says (go1.19.8, 1.21.13, 1.22.12, 1.23.5, 1.24.4, 1.25.12,
 * 1.26.11, 1.27.4); the unit test go_target::layout_tables_match_dwarf
 * compares every row with the DWARF of a fresh build of the same version,
 * so a wrong offset fails a test, not a user. DWARF, where present, wins.
 * 1.20 is absent: Debian ships no toolchain for it to check a row against.
 * Release-to-release changes the rows show: g grew fields before
 * atomicstatus in 1.23 and lost one before sched.bp in 1.25; m lost one
 * before procid in 1.25, and gained m.idleNode before createstack in 1.26;
 * moduledata.gofunc moved from +320 to +344 in 1.27
 * (same pclntab magic); memRecordCycle lost alloc_bytes and free_bytes in
 * 1.27.
 */
#include "internal.h"

static const struct layout_row {
	int minor;
	struct go_layout L;
	struct go_heap_layout H;
} rows[] = {
	{19, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 104, .g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 232,
		.g_gopc = 296, .g_startpc = 312, .g_labels = 360, .g_parentgoid = -1, .m_procid = 72,
		.m_curg = 192, .m_alllink = 336, .m_createstack = 360, .m_vdsosp = 800, .m_vdsopc = 808, .md_gofunc = 304,
		.md_text = 176, .sched_gfree_n = 176, .sched_ngsys = 72, .p_gfree_n = 2472,
		.gc_heaplive = 136},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{21, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 104, .g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 208,
		.g_gopc = 280, .g_startpc = 296, .g_labels = 344, .g_parentgoid = 272,
		.m_procid = 72, .m_curg = 192, .m_alllink = 336, .m_createstack = 360, .m_vdsosp = 808, .m_vdsopc = 816,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = 184, .sched_ngsys = 72,
		.p_gfree_n = 2472, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{22, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 104, .g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 208,
		.g_gopc = 280, .g_startpc = 296, .g_labels = 344, .g_parentgoid = 272,
		.m_procid = 72, .m_curg = 192, .m_alllink = 328, .m_createstack = 352, .m_vdsosp = 1120, .m_vdsopc = 1128,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = 184, .sched_ngsys = 72,
		.p_gfree_n = 2472, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{23, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 104, .g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 152,
		.g_goid = 160, .g_waitsince = 176, .g_waitreason = 184, .g_lockedm = 216,
		.g_gopc = 288, .g_startpc = 304, .g_labels = 352, .g_parentgoid = 280,
		.m_procid = 72, .m_curg = 192, .m_alllink = 328, .m_createstack = 352, .m_vdsosp = 856, .m_vdsopc = 864,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = 184, .sched_ngsys = 72,
		.p_gfree_n = 2464, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{24, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 104, .g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 152,
		.g_goid = 160, .g_waitsince = 176, .g_waitreason = 184, .g_lockedm = 216,
		.g_gopc = 288, .g_startpc = 304, .g_labels = 352, .g_parentgoid = 280,
		.m_procid = 72, .m_curg = 192, .m_alllink = 328, .m_createstack = 352, .m_vdsosp = 880, .m_vdsopc = 888,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = 184, .sched_ngsys = 72,
		.p_gfree_n = 2464, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{25, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 96, .g_syscallsp = 104, .g_syscallpc = 112, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 208,
		.g_gopc = 280, .g_startpc = 296, .g_labels = 344, .g_parentgoid = 272,
		.m_procid = 64, .m_curg = 184, .m_alllink = 344, .m_createstack = 368, .m_vdsosp = 896, .m_vdsopc = 904,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = -1, .sched_ngsys = 80,
		.p_gfree_n = -1, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{26, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 96, .g_syscallsp = 104, .g_syscallpc = 112, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 208,
		.g_gopc = 288, .g_startpc = 304, .g_labels = 352, .g_parentgoid = 280,
		.m_procid = 64, .m_curg = 184, .m_alllink = 352, .m_createstack = 392, .m_vdsosp = 896, .m_vdsopc = 904,
		.md_gofunc = 320, .md_text = 176, .sched_gfree_n = -1, .sched_ngsys = 96,
		.p_gfree_n = -1, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 32, .cyc_size = 32, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = 16, .cyc_free_bytes = 24}},
	{27, {.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48, .g_sched_sp = 56, .g_sched_pc = 64,
		.g_sched_bp = 96, .g_syscallsp = 104, .g_syscallpc = 112, .g_atomicstatus = 144,
		.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176, .g_lockedm = 208,
		.g_gopc = 288, .g_startpc = 304, .g_labels = 352, .g_parentgoid = 280,
		.m_procid = 64, .m_curg = 184, .m_alllink = 352, .m_createstack = 392, .m_vdsosp = 896, .m_vdsopc = 904,
		.md_gofunc = 344, .md_text = 176, .sched_gfree_n = -1, .sched_ngsys = 96,
		.p_gfree_n = -1, .gc_heaplive = 104},
	 {.bucket_size = 48, .b_allnext = 8, .b_typ = 16, .b_size = 32, .b_nstk = 40, .mr_active = 0,
		.mr_future = 16, .cyc_size = 16, .cyc_allocs = 0, .cyc_frees = 8,
		.cyc_alloc_bytes = -1, .cyc_free_bytes = -1}},
};

bool go_layout_for_version(int minor, struct go_layout *L, struct go_heap_layout *H)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].minor != minor)
			continue;
		*L = rows[i].L;
		*H = rows[i].H;
		return true;
	}
	return false;
}

/*
 * elf_img: the hand-made ELF64 images the tests feed to the symbolizer and
 * the unwinder (tests/fuzz/gen_seeds.c writes them as seeds, the hostile
 * reliability tests map them into a target, test_unwind reads its own). One
 * header, so that the seeds and the tests keep making the same files.
 * Header-only: gen_seeds is built by tests/fuzz/run, outside meson.
 */
#ifndef DIAG_TEST_ELF_IMG_H
#define DIAG_TEST_ELF_IMG_H

#include <elf.h>
#include <stdint.h>
#include <string.h>

/* Fill eh as a little-endian x86-64 ET_DYN ELF64 header with phnum program
 * headers right after it. Every other field is the caller's (zero in a
 * fresh image). */
static inline void elf_img_header(Elf64_Ehdr *eh, uint16_t phnum)
{
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = phnum;
}

/* How many hostile variants elf_img_hostile knows. */
#define ELF_IMG_NHOSTILE 5

/*
 * Turn a valid image (at least 3584 bytes, one program header) into hostile
 * variant which: 0 bad magic, 1 huge header counts, 2 a section-header
 * offset that wraps, 3 random section headers at 2048 and a PT_GNU_EH_FRAME
 * pointing past the end of everything, 4 a bad ELF class.
 */
static inline void elf_img_hostile(uint8_t *img, int which)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	switch (which) {
	case 0:
		img[EI_MAG3] = 'X';
		break;
	case 1:
		eh->e_phnum = 0xffff;
		eh->e_shnum = 0xffff;
		eh->e_shoff = 0xffffffffffff0000ull;
		break;
	case 2:
		eh->e_shoff = (uint64_t)0 - 60;
		eh->e_shnum = 1;
		break;
	case 3: {
		Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
		eh->e_phnum = 2;
		ph[1] = (Elf64_Phdr){.p_type = PT_GNU_EH_FRAME,
				     .p_flags = PF_R,
				     .p_offset = 0x7ffffff0,
				     .p_vaddr = 0x7fffffff0,
				     .p_filesz = 0x1000000,
				     .p_memsz = 0x1000000};
		eh->e_shoff = 2048;
		eh->e_shnum = 24;
		eh->e_shstrndx = 5;
		uint32_t seed = 12345;
		for (size_t i = 2048; i < 2048 + 24 * sizeof(Elf64_Shdr); i++) {
			seed = seed * 1103515245u + 12345u;
			img[i] = (uint8_t)(seed >> 16);
		}
		break;
	}
	case 4:
		img[EI_CLASS] = 7;
		break;
	}
}

#endif

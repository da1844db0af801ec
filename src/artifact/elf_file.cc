#include "artifact/elf_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace sluice::artifact {

namespace {

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

}  // namespace

arrow::Result<ElfFile> ElfFile::Read(const std::string& path, const std::string& section_name) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return arrow::Status::IOError("libelf initialisation failed: ", elf_errmsg(-1));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return arrow::Status::IOError("cannot open '", path, "': ", std::strerror(errno));
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(fd, ELF_C_READ, nullptr));
  auto bad = [&](std::string_view why) {
    return arrow::Status::Invalid("'", path, "' is not a readable ELF shared library: ", why);
  };
  ElfFile out;
  arrow::Status status = [&]() -> arrow::Status {
    if (elf == nullptr || elf_kind(elf.get()) != ELF_K_ELF) return bad("not an ELF file");
    GElf_Ehdr ehdr;
    if (gelf_getehdr(elf.get(), &ehdr) == nullptr) return bad(elf_errmsg(-1));
    out.is_shared_object = ehdr.e_type == ET_DYN;
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf.get(), &shstrndx) != 0) return bad(elf_errmsg(-1));
    for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn != nullptr;
         scn = elf_nextscn(elf.get(), scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) return bad(elf_errmsg(-1));
      const char* name = elf_strptr(elf.get(), shstrndx, shdr.sh_name);
      if (name != nullptr && section_name == name && shdr.sh_type != SHT_NOBITS) {
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data == nullptr || data->d_buf == nullptr) return bad("cannot read section data");
        out.section = std::string(static_cast<const char*>(data->d_buf), data->d_size);
      }
      if (shdr.sh_type == SHT_DYNSYM && shdr.sh_entsize > 0) {
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data == nullptr) return bad("cannot read the dynamic symbol table");
        const size_t count = shdr.sh_size / shdr.sh_entsize;
        for (size_t i = 0; i < count; ++i) {
          GElf_Sym sym;
          if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
          const int bind = GELF_ST_BIND(sym.st_info);
          if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
          const char* sym_name = elf_strptr(elf.get(), shdr.sh_link, sym.st_name);
          if (sym_name != nullptr && *sym_name != '\0') out.exported_symbols.insert(sym_name);
        }
      }
    }
    return arrow::Status::OK();
  }();
  elf.reset();
  close(fd);
  if (!status.ok()) return status;
  return out;
}

}  // namespace sluice::artifact

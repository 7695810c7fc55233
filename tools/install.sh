#!/bin/sh
# ninja install: static library, public headers and a pkg-config file under
# $PREFIX (default /usr/local). DESTDIR is honoured for staged installs.
set -eu
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
dest=${DESTDIR:-}
version=$(sed -n 's/^#define BARECUDA_VERSION "\(.*\)"/\1/p' runtime/include/barecuda.h)
install -d "$dest$prefix/lib/pkgconfig" "$dest$prefix/include/barecuda" "$dest$prefix/bin"
install -m 0644 build/libbarecuda.a "$dest$prefix/lib/"
install -m 0644 runtime/include/barecuda.h "$dest$prefix/include/"
install -m 0644 runtime/include/barecuda/*.h "$dest$prefix/include/barecuda/"
[ -x build/bin/barecuda ] && install -m 0755 build/bin/barecuda "$dest$prefix/bin/"
cat > "$dest$prefix/lib/pkgconfig/barecuda.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: barecuda
Description: minimal CUDA driver-API runtime with deterministic tensor-core GEMM
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lbarecuda
Libs.private: -ldl -lpthread -lm
PC
echo "installed barecuda $version under $dest$prefix"

/*
 * Test-only stand-in for Windows' bcryptprimitives.dll, which Debian's Wine 8 lacks.
 *
 * Rust's standard library (1.78 and later) imports ProcessPrng from bcryptprimitives.dll for
 * HashMap seeds (library/std/src/sys/random/windows.rs); without the DLL the .exe stops at load
 * with status c0000135 under Wine 8 (../shared/research/windows_wine.md). Real Windows 10 and 11
 * have the DLL: this file is never shipped, only placed on the Wine search path by the tests
 * (tests/common/wine.rs).
 *
 * ProcessPrng's documented signature: BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData),
 * always TRUE. RtlGenRandom (SystemFunction036, advapi32) fills the buffer from the system RNG;
 * its length is a ULONG, so larger requests are filled in pieces.
 */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
